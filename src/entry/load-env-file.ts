import { join, relative } from 'node:path';
import { applyEnvFile, type EnvFileResult } from '../config/env-file';

/**
 * The entry points (src/main.ts, src/worker.ts, src/api/server.ts, src/sandbox/server.ts, and the replay gate
 * src/tools/replay-check.ts, which shares the worker's configuration), as built into dist/.
 */
const ENTRY_POINTS = new Set([
  'main',
  'worker',
  'api/server',
  'sandbox/server',
  'tools/replay-check',
  'tools/temporal-cli',
]);

/**
 * Imported first by every entry point (before the tracing preload, which reads OTEL_* from the environment):
 * `.env` in the working directory fills what the environment does not set. Only when the process was started as
 * one of the entry points: importing src/worker.ts into a test or a tool reads nothing. runEntry logs the result.
 */
let result: EnvFileResult = { applied: [], overridden: [] };
const entry = require.main
  ? relative(join(__dirname, '..'), require.main.filename)
      .replace(/\\/g, '/')
      .replace(/\.[jt]s$/, '')
  : '';
if (ENTRY_POINTS.has(entry)) {
  try {
    result = applyEnvFile();
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(78); // EX_CONFIG, as for any invalid configuration
  }
}

/** What this process read from `.env` (names only). */
export function envFileResult(): EnvFileResult {
  return result;
}
