import { ConfigError, loadConfig } from '../../src/config';

/** The issues loadConfig reports for `env` (each naming its variable); fails the test when it accepts `env`. */
export function configIssuesOf(
  env: Record<string, string>,
  role?: 'all' | 'api' | 'worker',
): { variable: string; message: string }[] {
  try {
    loadConfig(env, { role });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues;
  }
  throw new Error('expected a ConfigError');
}
