import { existsSync } from 'node:fs';
import { loadClientConfigProfile, toClientOptions, type ClientConfigProfile } from '@temporalio/envconfig';

/**
 * Where the service finds Temporal, decided the way every Temporal tool decides it (@temporalio/envconfig, the same
 * rules as the `temporal` CLI): a profile of a TOML config file (TEMPORAL_PROFILE, default "default"; the file is
 * TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml), then TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
 * TEMPORAL_API_KEY and TEMPORAL_TLS* over it. Our own defaults only fill what neither gives: namespace "default",
 * and no address at all means "start the embedded dev server".
 */
export const DEFAULT_NAMESPACE = 'default';

/** A host:port Temporal address (the CLI's form; no scheme). */
export const TEMPORAL_ADDRESS_PATTERN = /^[A-Za-z0-9.[\]:-]+:\d{1,5}$/;

export interface TemporalProfile {
  /** Undefined: neither the environment nor the profile names a server (embedded dev server). */
  address?: string;
  namespace: string;
  /** Which variable or profile gave the address (for messages; never a secret). */
  addressFrom?: string;
  /** An API key is configured (its value is never kept here). */
  apiKey: boolean;
  /** TLS is on (explicitly, or implied by an API key). */
  tls: boolean;
}

export interface ProfileIssue {
  variable: string;
  message: string;
}

/**
 * The environment as @temporalio/envconfig should see it: blank values are unset (as in our zod schema), except
 * TEMPORAL_GRPC_META_*, where a blank value removes a header the profile sets.
 */
export function envForEnvconfig(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (v.trim() === '' && !k.startsWith('TEMPORAL_GRPC_META_')) continue;
    out[k] = v;
  }
  return out;
}

/** Where the profile came from, for messages: `profile "prod" of /path/temporal.toml`. */
function profileName(env: Record<string, string>): string {
  const file = env.TEMPORAL_CONFIG_FILE ?? '~/.config/temporalio/temporal.toml';
  return `profile "${env.TEMPORAL_PROFILE ?? 'default'}" of ${file}`;
}

/**
 * Resolves the profile; problems come back as issues naming the variable to fix (TEMPORAL_CONFIG_FILE,
 * TEMPORAL_PROFILE, TEMPORAL_ADDRESS or a TEMPORAL_TLS_* path), never a secret.
 */
export function resolveTemporalProfile(
  rawEnv: Record<string, string | undefined>,
): { profile: TemporalProfile; issues: [] } | { profile?: undefined; issues: ProfileIssue[] } {
  const env = envForEnvconfig(rawEnv);
  // envconfig skips a missing file silently; a file named on purpose that is not there is a mistake.
  if (env.TEMPORAL_CONFIG_FILE !== undefined && !existsSync(env.TEMPORAL_CONFIG_FILE))
    return { issues: [{ variable: 'TEMPORAL_CONFIG_FILE', message: `${env.TEMPORAL_CONFIG_FILE} does not exist` }] };

  let fromFile: ClientConfigProfile;
  let merged: ClientConfigProfile;
  try {
    fromFile = loadClientConfigProfile({ overrideEnvVars: env, disableEnv: true });
    merged = loadClientConfigProfile({ overrideEnvVars: env });
  } catch (err) {
    const message = (err as Error).message;
    const variable = /^Profile '.*' not found/.test(message) ? 'TEMPORAL_PROFILE' : 'TEMPORAL_CONFIG_FILE';
    return { issues: [{ variable, message: `${profileName(env)}: ${message.split('\n')[0]}` }] };
  }

  const issues: ProfileIssue[] = [];
  const addressFrom =
    merged.address === undefined ? undefined : env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : profileName(env);
  if (merged.address !== undefined && !TEMPORAL_ADDRESS_PATTERN.test(merged.address))
    issues.push({
      variable: env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'TEMPORAL_PROFILE',
      message: `${addressFrom} gives address "${merged.address}": must be host:port, for example localhost:7233`,
    });

  // Certificates are read now, so a wrong path stops start-up here rather than at the first connection.
  let tls = false;
  try {
    const option = toClientOptions(merged).connectionOptions.tls;
    tls = option !== undefined && option !== false;
  } catch (err) {
    const path = (err as NodeJS.ErrnoException).path;
    const variable =
      Object.entries(env).find(([k, v]) => k.startsWith('TEMPORAL_TLS_') && v === path)?.[0] ??
      (fromFile.tls ? 'TEMPORAL_PROFILE' : 'TEMPORAL_TLS');
    issues.push({ variable, message: `cannot read ${path ?? 'a TLS file'}: ${(err as Error).message}` });
  }
  const apiKey = merged.apiKey !== undefined;
  // Embedded means no address from either source: credentials for a server we do not name are a mistake.
  if (merged.address === undefined && (apiKey || (merged.tls !== undefined && merged.tls.disabled !== true))) {
    const what = apiKey ? 'TEMPORAL_API_KEY' : 'TEMPORAL_TLS*';
    issues.push({
      variable: 'TEMPORAL_ADDRESS',
      message:
        `is required when ${what} is set (in the environment or the profile): ` +
        'unset, the embedded dev server is started, which takes neither',
    });
  }
  if (issues.length > 0) return { issues };
  return {
    profile: {
      address: merged.address,
      namespace: merged.namespace ?? DEFAULT_NAMESPACE,
      addressFrom,
      apiKey,
      tls,
    },
    issues: [],
  };
}
