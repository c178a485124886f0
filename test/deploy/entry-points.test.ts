import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedBuild } from '../helpers/build';

/**
 * The production entry points: `npm run worker|api|sandbox` run the build output and never compile (the image has
 * no dev dependencies), and every entry point reads `.env` from its working directory, the environment winning.
 */
const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

describe('production scripts', () => {
  it('start the build output with node, and their pre-scripts need nothing but node', () => {
    // `exec`: the shell npm runs the script in becomes node, so npm's SIGTERM/SIGINT reaches node itself.
    expect(pkg.scripts.worker).toBe('exec node dist/worker.js');
    expect(pkg.scripts.api).toBe('exec node dist/api/server.js');
    expect(pkg.scripts.sandbox).toBe('exec node dist/sandbox/server.js');
    for (const name of ['worker', 'api', 'sandbox']) {
      const pre = pkg.scripts[`pre${name}`] ?? '';
      expect(pre).toMatch(/^node scripts\/check-build\.mjs [a-z/]+$/);
      // The dev convenience builds; the production script does not.
      expect(pkg.scripts[`dev:${name}`]).toMatch(/^npm run build --silent && node dist\//);
    }
  });

  it('check-build fails clearly when the build output is missing, and passes when it is there', () => {
    const project = mkdtempSync(join(tmpdir(), 'paylater-check-build-'));
    mkdirSync(join(project, 'scripts'));
    copyFileSync(join(root, 'scripts', 'check-build.mjs'), join(project, 'scripts', 'check-build.mjs'));
    const run = () =>
      spawnSync(process.execPath, [join(project, 'scripts', 'check-build.mjs'), 'worker'], { encoding: 'utf8' });

    const missing = run();
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('dist/worker.js is missing');
    expect(missing.stderr).toContain('npm run build');

    mkdirSync(join(project, 'dist'));
    writeFileSync(join(project, 'dist', 'worker.js'), '');
    expect(run()).toMatchObject({ status: 0, stderr: '' });

    // A checkout whose sources changed after the build: started all the same, with a warning.
    mkdirSync(join(project, 'src'));
    const later = new Date(Date.now() + 60_000);
    writeFileSync(join(project, 'src', 'main.ts'), '');
    utimesSync(join(project, 'src', 'main.ts'), later, later);
    const stale = run();
    expect(stale.status).toBe(0);
    expect(stale.stderr).toContain('warning: src/ changed after dist/worker.js was built');
  });
});

describe('.env in the working directory', () => {
  // The run's shared build (test/helpers/build.ts); the entry points stop at the configuration, before the bundle.
  let out: string;
  const cwd = mkdtempSync(join(tmpdir(), 'paylater-dotenv-'));

  beforeAll(async () => {
    out = await sharedBuild();
    // Invalid values, so each process stops at its configuration check and says which variable it read.
    writeFileSync(
      join(cwd, '.env'),
      [
        'PORT=port-from-dotenv',
        'INTERNAL_PORT=port-from-dotenv',
        'SANDBOX_PORT=port-from-dotenv',
        'SANDBOX_STEP_MS=step-from-dotenv',
        '',
      ].join('\n'),
    );
  }, 300_000);

  const start = (entry: string, env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [join(out, entry)], {
      cwd,
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, ...env },
    });

  it.each(['main.js', 'worker.js', 'api/server.js'])('is read by %s, and the environment wins', (entry) => {
    const result = start(entry, { INTERNAL_PORT: '3999' });
    expect(result.status).toBe(78); // EX_CONFIG: stopped at the configuration, naming the variable
    expect(result.stderr).toContain('PORT: must be a port number');
    // INTERNAL_PORT came from the environment, which wins over the file.
    expect(result.stderr).not.toContain('INTERNAL_PORT');
  });

  it('is read by the bank sandbox (sandbox/server.js), and the environment wins', () => {
    const result = start('sandbox/server.js', { SANDBOX_STEP_MS: '10' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Invalid sandbox environment');
    expect(result.stderr).toContain('SANDBOX_PORT');
    expect(result.stderr).not.toContain('SANDBOX_STEP_MS');
  });

  it('is not read by a process that only imports an entry module (tests, tools)', () => {
    const result = spawnSync(
      process.execPath,
      ['-e', `require(${JSON.stringify(join(out, 'worker.js'))}); console.log(process.env.PORT ?? 'unset')`],
      { cwd, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
    );
    expect(result.stdout.trim()).toBe('unset');
  });
});
