import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The design card's layout (CONTRIBUTING.md): the files and folders it names exist, and the worker starts from
 * src/worker.ts (built to dist/worker.js) with its composition beside it in src/worker/.
 */
const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

describe("the design card's layout", () => {
  it.each(['package.json', 'tsconfig.json', 'src/worker.ts', 'docker-compose.yml', 'README.md'])(
    '%s is a file',
    (path) => {
      expect(statSync(join(root, path)).isFile()).toBe(true);
    },
  );

  it.each(['src/workflows', 'src/activities', 'src/worker', 'src/api', 'test'])('%s is a folder', (path) => {
    expect(statSync(join(root, path)).isDirectory()).toBe(true);
  });

  it('npm run worker runs src/worker.ts as built, and the worker has no second entry in src/worker/', () => {
    expect(pkg.scripts.worker).toBe('exec node dist/worker.js');
    expect(pkg.scripts.preworker).toBe('node scripts/check-build.mjs worker');
    expect(existsSync(join(root, 'src', 'worker', 'main.ts'))).toBe(false);
    expect(readFileSync(join(root, 'src', 'worker.ts'), 'utf8')).toContain("from './worker/factory'");
  });
});
