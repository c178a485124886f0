#!/usr/bin/env node
// Run before the production scripts (`npm run worker`, `npm run api`, `npm run sandbox`), which start the build
// output and never compile (an image installed without dev dependencies has no TypeScript). Needs nothing but Node:
// fails clearly when the build output is missing, and warns when src/ changed after it was built.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entries = process.argv.slice(2);
if (entries.length === 0) {
  process.stderr.write(
    'usage: node scripts/check-build.mjs <entry> (worker, api/server, sandbox/server, main, tools/replay-check)\n',
  );
  process.exit(2);
}

/** Newest modification time of the files under `dir` (0 when it does not exist). */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const dev = (entry) => (entry === 'api/server' ? 'api' : entry.replace(/\/(server|main)$/, '').replace('tools/', ''));
for (const entry of entries) {
  const built = join(root, 'dist', `${entry}.js`);
  if (!existsSync(built)) {
    process.stderr.write(
      `${relative(root, built)} is missing. This script runs the build output and never compiles: build it first ` +
        'with `npm run build` (which needs the dev dependencies), or use the image (Dockerfile), where it is built. ' +
        `During development, \`npm run dev:${dev(entry)}\` builds and starts.\n`,
    );
    process.exit(1);
  }
  // Only where the sources are (a checkout, not the image): a forgotten build would run yesterday's code.
  const sources = newest(join(root, 'src'));
  if (sources > statSync(built).mtimeMs)
    process.stderr.write(
      `warning: src/ changed after ${relative(root, built)} was built: run \`npm run build\` to run your changes.\n`,
    );
}
