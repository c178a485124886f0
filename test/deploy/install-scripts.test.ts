import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `npm install` changes nothing outside the project's folder: no lifecycle script runs a system package manager
 * (what needs a system package is installed by scripts/install-system-packages.sh, which only .ci/run runs).
 */
const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const LIFECYCLE = ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare'];
const PACKAGE_MANAGERS = /\b(apt-get|apt|dpkg|aptitude|yum|dnf|apk|zypper|pacman|brew|snap)\b/;

/** The files a script line runs: `node scripts/x.mjs`, `bash scripts/y.sh`. */
function filesOf(line: string): string[] {
  return [...line.matchAll(/(?:^|\s)((?:scripts|\.ci)\/[\w./-]+)/g)].map((m) => m[1]!);
}

describe('npm lifecycle scripts', () => {
  const lifecycle = LIFECYCLE.filter((name) => pkg.scripts[name] !== undefined);

  it('are the ones this test knows (a new one is read below too)', () => {
    expect(lifecycle).toEqual(['postinstall']);
  });

  it.each(lifecycle)('%s runs no system package manager, nor does any script file it runs', (name) => {
    const line = pkg.scripts[name]!;
    expect(line).not.toMatch(PACKAGE_MANAGERS);
    const files = filesOf(line);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const code = readFileSync(join(root, file), 'utf8')
        .split('\n')
        // Comments and messages may name a package manager (telling the user what to run); calls may not.
        .filter((l) => /\b(spawn|spawnSync|exec|execSync|execFile|execFileSync|run)\(/.test(l));
      for (const call of code)
        expect({ file, call }).toEqual({ file, call: expect.not.stringMatching(PACKAGE_MANAGERS) });
    }
  });
});
