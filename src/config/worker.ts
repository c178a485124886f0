import { loadConfig, type Config } from './resolve';

/**
 * `npm run worker` (and the replay gate, which checks the worker's build): no HTTP listener but its own metrics and
 * health one, so no listener ports, no operator keys, no codec, and no settings of new workflows (the API starts them).
 */
export type WorkerConfig = Omit<
  Config,
  'port' | 'internalPort' | 'internalHost' | 'operatorApiKeys' | 'codec' | 'settings'
>;

/**
 * The configuration of `npm run worker` (role `worker`): with a real bank it is not required to hold the merchant API
 * keys nor the account webhooks' security header (least privilege).
 */
export function loadWorkerConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  return loadConfig(env, { role: 'worker' });
}
