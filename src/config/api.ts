import { loadConfig, type Config } from './resolve';

/** `npm run api`: the public and internal listeners. No worker sizing, no worker listener. */
export type ApiConfig = Omit<Config, 'worker' | 'workerMetricsPort' | 'workerMetricsHost'>;

/**
 * The configuration of `npm run api` (role `api`): with a real bank the merchant and operator keys and the account
 * webhooks' security header are required; SHUTDOWN_DRAIN_DELAY defaults to 5 s (a load balancer takes it out).
 */
export function loadApiConfig(env: Record<string, string | undefined> = process.env): ApiConfig {
  return loadConfig(env, { role: 'api' });
}
