import { join, relative } from 'node:path';

/**
 * The Node.js lines this service runs on: package.json's `engines` (test/entry/supported-node.test.ts keeps the two
 * equal). Each line from its first release that the dependencies accept (undici needs 22.19).
 */
export const SUPPORTED_NODE_LINES: readonly { major: number; minor: number }[] = [
  { major: 22, minor: 19 },
  { major: 24, minor: 0 },
  { major: 26, minor: 0 },
];

/** The supported range as `engines` writes it: `^22.19.0 || ^24.0.0 || ^26.0.0`. */
export function supportedNodeRange(): string {
  return SUPPORTED_NODE_LINES.map(({ major, minor }) => `^${major}.${minor}.0`).join(' || ');
}

/** Whether `version` (`v22.19.0`, as process.version writes it) is on a supported line. */
export function isSupportedNode(version: string): boolean {
  const match = /^v?(\d+)\.(\d+)\./.exec(version);
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return SUPPORTED_NODE_LINES.some((line) => line.major === major && minor >= line.minor);
}

/** The npm script that starts an entry point (its path under dist/, without `.js`) on the project's pinned Node. */
export function commandFor(entry: string): string {
  const scripts: Record<string, string> = {
    main: 'npm start',
    worker: 'npm run worker',
    'api/server': 'npm run api',
    'sandbox/server': 'npm run sandbox',
    'tools/replay-check': 'npm run replay-check',
    'tools/temporal-cli': 'npm run temporal',
    'tools/deploy': 'npm run deploy',
  };
  return scripts[entry] ?? 'npm start';
}

/** The one line an entry point prints under an unsupported Node (docs/decisions/0044-pinned-node-for-npm-scripts.md). */
export function unsupportedNodeMessage(version: string, entry: string): string {
  return (
    `paylater: Node.js ${version} is not supported (needs ${supportedNodeRange()}). ` +
    `Run \`${commandFor(entry)}\`: after \`npm install\` the npm scripts run on the project's pinned Node, ` +
    'or put Node 22, 24 or 26 first on PATH.'
  );
}

// Imported first by every entry point, before any dependency loads: a dependency that needs a newer Node would
// otherwise crash with a stack trace of its own (undici 8 on Node 20: "Cannot read properties of undefined").
if (!isSupportedNode(process.version)) {
  const entry = require.main
    ? relative(join(__dirname, '..'), require.main.filename)
        .replace(/\\/g, '/')
        .replace(/\.[jt]s$/, '')
    : 'main';
  process.stderr.write(`${unsupportedNodeMessage(process.version, entry)}\n`);
  process.exit(1);
}
