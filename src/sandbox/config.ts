import { z } from 'zod';
import { STATUS_NAME_PATTERN, WEBHOOK_SECURITY_HEADER_PATTERN } from '../shared/bank-wire';
import type { SandboxOptions } from './types';

const intFrom = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

/** The environment of `npm run sandbox` (src/sandbox/server.ts); the app's own config does not read these. */
const sandboxEnvSchema = z.object({
  SANDBOX_PORT: optional(intFrom(0, 65_535)).default(4010),
  SANDBOX_HOST: optional(z.string().min(1)).default('127.0.0.1'),
  SANDBOX_CLIENT_ID: optional(z.string().min(1)).default('sandbox-client'),
  SANDBOX_CLIENT_SECRET: optional(z.string().min(1)).default('sandbox-secret'),
  SANDBOX_ACCOUNT_WEBHOOK_URL: optional(
    z
      .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' })
      .refine((url) => !url.includes('?') && !url.includes('#'), 'must not contain any parameters'),
  ),
  SANDBOX_WEBHOOK_SECURITY_HEADER: optional(
    z.string().regex(WEBHOOK_SECURITY_HEADER_PATTERN, 'must match [ a-zA-Z0-9=+/]*'),
  ),
  SANDBOX_TOKEN_TTL_SECONDS: optional(intFrom(1, 86_400)),
  SANDBOX_STEP_MS: optional(intFrom(0, 3_600_000)),
  /** Another bank's vocabulary: the default lifecycle's statuses, comma-separated, the first at creation. */
  SANDBOX_STATUSES: optional(
    z
      .string()
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .pipe(
        z.array(z.string().regex(STATUS_NAME_PATTERN, 'must be status names')).min(1, 'must list at least one status'),
      ),
  ),
  SANDBOX_ACTIVATION: optional(z.enum(['next-full-hour', 'immediate'])),
  SANDBOX_LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])).default('info'),
});

export interface SandboxServerConfig {
  port: number;
  host: string;
  logLevel: string;
  options: Omit<SandboxOptions, 'logger'>;
}

/** Thrown with one line per bad variable, each naming it; the entry prints the message, not a stack. */
export class SandboxConfigError extends Error {
  override readonly name = 'SandboxConfigError';
}

export function loadSandboxConfig(env: NodeJS.ProcessEnv): SandboxServerConfig {
  const parsed = sandboxEnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new SandboxConfigError(`Invalid sandbox environment:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  return {
    port: e.SANDBOX_PORT,
    host: e.SANDBOX_HOST,
    logLevel: e.SANDBOX_LOG_LEVEL,
    options: {
      clientId: e.SANDBOX_CLIENT_ID,
      clientSecret: e.SANDBOX_CLIENT_SECRET,
      tokenTtlSeconds: e.SANDBOX_TOKEN_TTL_SECONDS,
      lifecycle: { stepMs: e.SANDBOX_STEP_MS, statuses: e.SANDBOX_STATUSES },
      accountWebhook: {
        endpoint: e.SANDBOX_ACCOUNT_WEBHOOK_URL,
        securityHeader: e.SANDBOX_WEBHOOK_SECURITY_HEADER,
        activation: e.SANDBOX_ACTIVATION,
      },
    },
  };
}
