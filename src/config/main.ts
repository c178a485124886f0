import { loadConfig, type Config } from './resolve';

/** `npm start`: the embedded stack in one process (listeners, worker, and the dev server and sandbox it starts). */
export type MainConfig = Config;

/** The configuration of `npm start`: every variable, each process's part (role `all`). */
export function loadMainConfig(env: Record<string, string | undefined> = process.env): MainConfig {
  return loadConfig(env, { role: 'all' });
}
