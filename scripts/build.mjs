#!/usr/bin/env node
// `npm run build` (and so `npm start`'s prestart and the scripts that build before they run): compile src into dist
// with the TypeScript native compiler (TypeScript 7, the devDependency `typescript-native`; TypeScript 5.9 stays
// installed for the tools that need its JavaScript API: ts-jest, typescript-eslint, `npm run dev:typecheck`), then
// bundle the workflow code (dist/worker/prebuilt-workflow-bundle.js, which skips a bundle whose manifest still
// matches its inputs).
// Nothing changed since the last build (the same sources, compiler settings and lockfile, and dist as that build left
// it): nothing is done, so a start without changes does not compile. `--force` builds anyway.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const STAMP = join(dist, '.build-stamp.json');
const force = process.argv.includes('--force');
// `npm install`'s postinstall builds too, so the first `npm start` after it has nothing to compile. There a build
// that cannot run (no sources, no dev dependencies) or fails only warns: `npm start` builds again and says why.
const postinstall = process.argv.includes('--postinstall');
if (postinstall && !existsSync(join(root, 'src'))) process.exit(0);

function files(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path) : entry.isFile() ? [path] : [];
  });
}

/** SHA-256 over the files' relative paths and contents, in path order. */
function hashOf(paths) {
  const hash = createHash('sha256');
  for (const path of paths.map((p) => relative(root, p).split(sep).join('/')).sort()) {
    const content = readFileSync(join(root, path));
    hash.update(`${path}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}

const require = createRequire(import.meta.url);
function compiler() {
  for (const name of ['typescript-native', 'typescript']) {
    try {
      const dir = dirname(require.resolve(`${name}/package.json`));
      const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      // One thread: on a 2-core machine it needs half the CPU time of the default 4 checkers and is no slower.
      const flags = name === 'typescript-native' ? ['--singleThreaded'] : [];
      return { bin: join(dir, 'bin', 'tsc'), version, flags };
    } catch {
      // not installed: the next one
    }
  }
  process.stderr.write(
    'No TypeScript compiler in node_modules: run `npm install` (the build needs the dev dependencies).\n',
  );
  process.exit(postinstall ? 0 : 1);
}

const tsc = compiler();
const inputs = hashOf([
  ...files(join(root, 'src')),
  ...['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/build.mjs']
    .map((f) => join(root, f))
    .filter((f) => existsSync(f)),
]);
const distHash = () => hashOf(files(dist).filter((f) => f !== STAMP));

let stamp;
try {
  stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
} catch {
  stamp = undefined;
}
if (!force && stamp?.inputs === inputs && stamp.compiler === tsc.version && stamp.dist === distHash()) {
  process.stderr.write('build: dist is up to date (sources, settings and lockfile unchanged)\n');
  process.exit(0);
}

/**
 * tsc never deletes: the output of a source file that moved or went away would stay in dist and, for a file that
 * became a folder (src/config.ts → src/config/), shadow the new folder's index for `require('./config')`. So every
 * compiled file without its source goes; the workflow bundles (dist/workflow-bundle*, not compiled from one source)
 * stay.
 */
function removeStaleOutput() {
  for (const path of files(dist)) {
    const rel = relative(dist, path).split(sep).join('/');
    if (rel.startsWith('workflow-bundle') || rel === '.build-stamp.json') continue;
    const source = rel.replace(/\.js(\.map)?$|\.d\.ts(\.map)?$/, '');
    if (source === rel) continue;
    if (!existsSync(join(root, 'src', `${source}.ts`))) rmSync(path);
  }
}

function run(args) {
  const { status } = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (status === 0) return;
  if (postinstall) {
    process.stderr.write('build: failed during npm install; `npm start` or `npm run build` will build and show why\n');
    process.exit(0);
  }
  process.exit(status ?? 1);
}
run([tsc.bin, '-p', 'tsconfig.build.json', ...tsc.flags]);
removeStaleOutput();
run([join(dist, 'worker', 'prebuilt-workflow-bundle.js')]);
writeFileSync(STAMP, `${JSON.stringify({ inputs, compiler: tsc.version, dist: distHash() }, null, 2)}\n`);
