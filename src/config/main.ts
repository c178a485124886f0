import { join } from 'node:path';
import { persistedDevelopmentKeys } from './development-keys';
import { loadConfig, type Config } from './resolve';

/** The repository (dist/config or src/config → two folders up): TEMPORAL_DATA_DIR is relative to it. */
const ROOT = join(__dirname, '..', '..');

/** `npm start`: the embedded stack in one process (listeners, worker, and the dev server and sandbox it starts). */
export type MainConfig = Config;

/**
 * The configuration of `npm start`: every variable, each process's part (role `all`). Development keys (keys unset)
 * are kept in the data folder and reused at the next start.
 */
export function loadMainConfig(env: Record<string, string | undefined> = process.env): MainConfig {
  return loadConfig(env, { role: 'all', developmentKeys: (dataDir) => persistedDevelopmentKeys(dataDir, ROOT) });
}
