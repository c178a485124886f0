import { isIP } from 'node:net';
import { z } from 'zod';
import { parsePayloadEncryptionKeys, type PayloadEncryptionKey } from '../security/payload-codec';
import { parseMerchantApiKeys, parseOperatorApiKeys, sharedApiKeys } from '../security/api-keys';
import { WEBHOOK_SECURITY_HEADER_PATTERN } from '../shared/bank-wire';
import { CALLBACK_ALLOWED_ORIGINS, checkCallbackUrl, parseAllowedOrigins } from '../security/callback-url';
import { CALLBACK_SIGNING_SECRETS, signingSecretProblem } from '../security/callback-signature';
import { CALLBACK_SIGNING_MASTER_SECRETS, masterSecretProblem } from '../security/merchant-signing-secret';
import {
  DEFAULT_SERVICE_SETTINGS,
  DEFAULT_STATUS_ORDER,
  DEFAULT_TERMINAL_STATUSES,
  formatDuration,
  parseDurationMs,
  SETTING_BOUNDS,
  type Bounds,
} from '../shared/application-settings';
import { DEFAULT_MERCHANT_LIMITS } from './merchants';
import { TEMPORAL_ADDRESS_PATTERN } from '../temporal/profile';
import { DEFAULT_WORKER_DEPLOYMENT_NAME, DEPLOYMENT_NAME_PATTERN } from '../temporal/worker-deployment';
import type { TracingConfig } from '../telemetry/tracing';
import { CALLBACK_PAYLOAD_VERSIONS, CURRENT_CALLBACK_PAYLOAD_VERSION } from '../activities/callback-payload';
import { CALLBACK_RETRY_WINDOW_BOUNDS, DEFAULT_CALLBACK_RETRY_WINDOW_MS } from '../shared/undelivered-callbacks';
import { callbackAllowList, resolveServiceSettings, type ConfigIssue } from './settings';
import { CONSENT_ASSIGNMENT_SETTINGS } from '../shared/consent-assignment';
import { parseAuditLogSetting } from '../audit/setting';
import { parseMerchantKeyStoreSetting } from '../keys/setting';

/**
 * The whole environment in one zod schema. loadConfig(env) is called only by
 * entry points; a bad or missing value stops start-up with a ConfigError naming each variable.
 *
 * Two shapes:
 * - embedded (BANK_BASE_URL unset): the bank sandbox is started in-process and every secret has a
 *   development default, so `npm start` works with nothing configured;
 * - real bank (BANK_BASE_URL set): BANK_AUTH_URL, BANK_CLIENT_ID, BANK_CLIENT_SECRET, PUBLIC_BASE_URL,
 *   WEBHOOK_HASH_SECRET, PAYLOAD_ENCRYPTION_KEYS, MERCHANT_API_KEYS, OPERATOR_API_KEYS and WEBHOOK_SECURITY_HEADER
 *   (unless WEBHOOK_SECURITY_HEADER_WAIVED=true) are required, and no development default is used.
 * No message ever echoes the value of a secret (MERCHANT_API_KEYS, OPERATOR_API_KEYS, WEBHOOK_HASH_SECRET*,
 * BANK_CLIENT_SECRET).
 *
 * Merchant callbacks: CALLBACK_ALLOWED_ORIGINS unset allows loopback origins on the embedded stack (one merchant
 * only) and nothing with a real bank; each merchant's signing secret is derived from CALLBACK_SIGNING_MASTER_SECRETS
 * (unset on the embedded stack: a development master), which a real bank requires once callbacks can go anywhere (an
 * allow-list or TRANSACTIONS_CALLBACK_URL), unless a one-merchant deployment sets CALLBACK_SIGNING_SECRETS instead.
 * What several merchants may not share is checked with the merchants (src/config/merchants.ts).
 */

export const DEV_DEFAULTS = {
  BANK_CLIENT_ID: 'sandbox-client',
  BANK_CLIENT_SECRET: 'sandbox-secret',
  WEBHOOK_HASH_SECRET: 'dev-only-webhook-hash-secret-change-me-0123456789',
};

const emptyToUndefined = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? undefined : v);
const optionalString = z.preprocess(emptyToUndefined, z.string().optional());
const httpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' })
  .transform((u) => u.replace(/\/+$/, ''));
const optionalUrl = z.preprocess(emptyToUndefined, httpUrl.optional());
/** A comma-separated list (blank entries ignored); undefined when unset. */
const optionalList = z.preprocess(emptyToUndefined, z.string().optional()).transform((v) =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
);
/** CALLBACK_ALLOWED_ORIGINS → normalised origins (src/security/callback-url.ts). */
const allowedOrigins = z.preprocess(emptyToUndefined, z.string().optional()).transform((value, ctx) => {
  if (value === undefined) return undefined;
  const { origins, problems } = parseAllowedOrigins(value);
  for (const message of problems) ctx.addIssue({ code: 'custom', message });
  return origins;
});
/** CALLBACK_SIGNING_SECRETS: the messages name a secret by position, never by value. */
const signingSecrets = optionalList.superRefine((secrets, ctx) => {
  if (secrets === undefined) return;
  if (secrets.length === 0) ctx.addIssue({ code: 'custom', message: 'must list at least one whsec_ secret' });
  secrets.forEach((secret, i) => {
    const problem = signingSecretProblem(secret);
    if (problem) ctx.addIssue({ code: 'custom', message: `secret ${i + 1} of ${secrets.length}: ${problem}` });
  });
});
/** CALLBACK_SIGNING_MASTER_SECRETS: the messages name a master by position, never by value. */
const signingMasters = optionalList.superRefine((masters, ctx) => {
  if (masters === undefined) return;
  if (masters.length === 0) ctx.addIssue({ code: 'custom', message: 'must list at least one master' });
  masters.forEach((master, i) => {
    const problem = masterSecretProblem(master);
    if (problem) ctx.addIssue({ code: 'custom', message: `master ${i + 1} of ${masters.length}: ${problem}` });
  });
});

/** AUDIT_LOG → where the audit trail is kept (src/audit/setting.ts); the message never repeats a postgres URL. */
const auditLog = z.preprocess(emptyToUndefined, z.string().optional()).transform((value, ctx) => {
  if (value === undefined) return undefined;
  const parsed = parseAuditLogSetting(value);
  if ('problem' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  }
  return parsed.setting;
});

/** MERCHANT_KEY_STORE → where the merchants' wrapped payload keys are (src/keys/setting.ts); never repeats a URL. */
const merchantKeyStore = z.preprocess(emptyToUndefined, z.string().optional()).transform((value, ctx) => {
  if (value === undefined) return undefined;
  const parsed = parseMerchantKeyStoreSetting(value);
  if ('problem' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  }
  return parsed.setting;
});

/** MERCHANT_KEY_ENCRYPTION: `on` writes under merchant keys; `decrypt-only` reads them (a rollout's first step). */
export const MERCHANT_KEY_ENCRYPTION_SETTINGS = ['on', 'decrypt-only'] as const;
/** How long a process believes a merchant's keys (or their erasure) before reading the store again. */
export const DEFAULT_MERCHANT_KEY_CACHE_TTL_MS = 60_000;
const MERCHANT_KEY_CACHE_BOUNDS: Bounds = { min: 0, max: 600_000 };

/** A listener's address: an IP address (node:net's isIP), unset for the process's default. */
const listenHost = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .refine((v) => isIP(v) !== 0, 'must be an IP address: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)')
    .optional(),
);

/** Where `npm start` binds every listener but the public one (the embedded stack: this machine only). */
export const LOOPBACK_HOST = '127.0.0.1';
/** Where a process of its own (`npm run api`, `npm run worker`) binds them: behind its own network boundary. */
export const ALL_INTERFACES_HOST = '0.0.0.0';

const port = (fallback: number) =>
  z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ error: 'must be a port number' })
      .int('must be an integer')
      .min(0, 'must be 0-65535')
      .max(65535, 'must be 0-65535')
      .default(fallback),
  );
/** A whole number from the environment; `min` is what the SDK or the server would refuse below. */
const wholeNumber = (min: number) =>
  z.coerce
    .number({ error: 'must be a whole number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(1_000_000, 'must be at most 1000000');
const count = (min: number, fallback: number) => z.preprocess(emptyToUndefined, wholeNumber(min).default(fallback));
const optionalCount = (min: number) => z.preprocess(emptyToUndefined, wholeNumber(min).optional());
/** A share between 0 and 1, exclusive of 0. */
const fraction = (fallback: number) =>
  z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ error: 'must be a number between 0 and 1' })
      .gt(0, 'must be above 0')
      .max(1, 'must be at most 1')
      .default(fallback),
  );
const BYTE_UNITS: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };
/** A memory size as Kubernetes writes one (`768Mi`, `2Gi`, `1G`, or bytes), in bytes; at least 64 MiB. */
const byteSize = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .transform((text, ctx) => {
      const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(text.trim());
      const bytes = m ? Math.floor(Number(m[1]) * BYTE_UNITS[m[2] ?? '']!) : NaN;
      if (!Number.isFinite(bytes) || bytes < 64 * 2 ** 20) {
        ctx.addIssue({ code: 'custom', message: 'must be a size of at least 64Mi, as 768Mi, 2Gi or bytes' });
        return z.NEVER;
      }
      return bytes;
    })
    .optional(),
);
/** A duration (`30s`, `5m`, `1h`, `30d`, or whole milliseconds) within `bounds`; undefined when unset. */
const duration = (bounds: Bounds) =>
  z.preprocess(
    emptyToUndefined,
    z
      .string()
      .optional()
      .transform((value, ctx): number | undefined => {
        if (value === undefined) return undefined;
        const ms = parseDurationMs(value);
        if (ms === undefined) {
          ctx.addIssue({ code: 'custom', message: 'must be a duration such as 500ms, 30s, 5m, 1h or 30d' });
          return z.NEVER;
        }
        if (ms < bounds.min || ms > bounds.max) {
          ctx.addIssue({
            code: 'custom',
            message: `must be between ${formatDuration(bounds.min)} and ${formatDuration(bounds.max)}`,
          });
          return z.NEVER;
        }
        return ms;
      }),
  );
/** `keyId:<base64 of 32 bytes>,…` (src/security/payload-codec.ts); the message never echoes a key. */
const payloadKeys = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .optional()
    .transform((value, ctx): PayloadEncryptionKey[] | undefined => {
      if (value === undefined) return undefined;
      try {
        return parsePayloadEncryptionKeys(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
);
/** Comma-separated origins (scheme://host[:port], nothing after it), as a browser sends them in `Origin`. */
const origins = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .optional()
    .transform((value, ctx): string[] | undefined => {
      if (value === undefined) return undefined;
      const list = value
        .split(',')
        .map((o) => o.trim())
        .filter((o) => o !== '');
      for (const origin of list) {
        let parsed: URL | undefined;
        try {
          parsed = new URL(origin);
        } catch {
          parsed = undefined;
        }
        if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
          ctx.addIssue({ code: 'custom', message: `"${origin}" is not an origin: http(s)://host[:port], no path` });
          return z.NEVER;
        }
      }
      return list;
    }),
);

/** WORKER_TUNER: fixed slot counts, or the SDK's resource-based slot suppliers (memory and CPU targets). */
export const WORKER_TUNERS = ['fixed', 'resource-based'] as const;
export const DEFAULT_WORKER_TARGET_MEMORY_USAGE = 0.8;
export const DEFAULT_WORKER_TARGET_CPU_USAGE = 0.9;
/** The SDK's own defaults, written out so the configuration shows what a worker runs with. */
export const DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS = 40;
export const DEFAULT_MAX_CONCURRENT_ACTIVITIES = 100;
/** The SDK's poller default: min(10, slots); more pollers than slots only wait for a slot. */
export const DEFAULT_MAX_POLLERS = 10;
/** Bank status reads per second across every worker (Temporal's task-queue rate limit on the bank-reads queue). */
export const DEFAULT_BANK_MAX_READS_PER_SECOND = 50;

/**
 * Shutdown (docs/operations.md "Shutdown and draining"). SHUTDOWN_DRAIN_DELAY: how long an API process keeps serving
 * with /readyz at 503 before its listeners stop accepting: long enough for a load balancer's health checks to take it
 * out (`npm run api`; `npm start` has no load balancer in front, so none). SHUTDOWN_GRACE_PERIOD: how long requests
 * in flight may then take. WORKER_SHUTDOWN_GRACE_TIME: how long a stopping worker lets running activities finish
 * before they are cancelled and handed back to Temporal (retried on another worker).
 */
export const DEFAULT_API_DRAIN_DELAY_MS = 5_000;
export const DEFAULT_SHUTDOWN_GRACE_PERIOD_MS = 10_000;
export const DEFAULT_WORKER_SHUTDOWN_GRACE_MS = 10_000;
const SHUTDOWN_BOUNDS: Bounds = { min: 0, max: 600_000 };

/**
 * Failed authentications (a key that is no one's) allowed per client address in each FAILED_AUTHENTICATIONS_WINDOW_MS
 * (FAILED_AUTHENTICATIONS_PER_15_MINUTES), on every merchant and operator route alike (the API, /codec, the console's
 * sign-in), per API process; beyond them 429 until the window ends, without checking the key (src/api/auth-failures.ts).
 */
export const DEFAULT_FAILED_AUTHENTICATIONS = 10;
export const FAILED_AUTHENTICATIONS_WINDOW_MS = 15 * 60_000;
/** Console sessions held per merchant (CONSOLE_SESSIONS_PER_MERCHANT): its people signed in at once, a browser each. */
export const DEFAULT_CONSOLE_SESSIONS_PER_MERCHANT = 50;

/** With a real bank, WEBHOOK_SECURITY_HEADER is at least this long (trimmed): it alone authenticates account webhooks. */
export const MIN_SECURITY_HEADER_LENGTH = 16;

/**
 * Which process reads the configuration: `all` (npm start: listeners and worker), `api` (npm run api: the two
 * listeners) or `worker` (npm run worker). A worker serves no HTTP: with a real bank it is not required to hold the
 * merchant API keys nor the account webhooks' security header (least privilege), everything else is the same.
 */
export type ConfigRole = 'all' | 'api' | 'worker';

/**
 * Tracing and log format (src/telemetry/tracing.ts, src/telemetry/logging.ts): part of the one schema below, and parsed alone by
 * the tracing preload, which must start before express, http and undici are loaded (so before loadConfig runs).
 * Tracing is on when an OTLP endpoint is set; OTEL_SDK_DISABLED=true turns it off all the same.
 */
export type { TracingConfig };

export const OBSERVABILITY_ENV = {
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl,
  OTEL_EXPORTER_OTLP_PROTOCOL: z.preprocess(
    emptyToUndefined,
    z
      .enum(['http/protobuf', 'http/json'], {
        error: 'must be http/protobuf or http/json (grpc is not supported by this service)',
      })
      .default('http/protobuf'),
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.preprocess(
    emptyToUndefined,
    z
      .enum(['http/protobuf', 'http/json'], {
        error: 'must be http/protobuf or http/json (grpc is not supported by this service)',
      })
      .optional(),
  ),
  OTEL_SERVICE_NAME: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .max(255, 'must be at most 255 characters')
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional(),
  ),
  OTEL_SDK_DISABLED: z.preprocess(emptyToUndefined, z.enum(['true', 'false']).default('false')),
  /** Unset: pretty when stdout is a terminal, JSON otherwise. */
  LOG_FORMAT: z.preprocess(
    emptyToUndefined,
    z.enum(['json', 'pretty'], { error: 'must be json or pretty' }).optional(),
  ),
};

type ObservabilityEnv = z.infer<z.ZodObject<typeof OBSERVABILITY_ENV>>;

export function tracingFromEnv(e: ObservabilityEnv): TracingConfig | undefined {
  if (e.OTEL_SDK_DISABLED === 'true') return undefined;
  const url =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces` : undefined);
  if (!url) return undefined;
  return {
    url,
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL,
    serviceName: e.OTEL_SERVICE_NAME,
  };
}

/**
 * The tracing settings alone, for the preload that runs before loadConfig: undefined when tracing is off or the
 * variables are invalid (loadConfig then stops start-up naming them).
 */
export function loadTracingConfig(env: Record<string, string | undefined>): TracingConfig | undefined {
  const parsed = z.object(OBSERVABILITY_ENV).safeParse(env);
  return parsed.success ? tracingFromEnv(parsed.data) : undefined;
}

/** Every variable the service reads (the sandbox has its own: src/sandbox/config.ts), with its type and default. */
export const ENV_SHAPE = {
  NODE_ENV: optionalString,
  ...OBSERVABILITY_ENV,
  LOG_LEVEL: z.preprocess(
    emptyToUndefined,
    z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  ),
  /** The public listener (the bank's webhooks, /healthz). */
  PORT: port(3000),
  /** The internal listener (merchant facade, /readyz, /metrics, codec). */
  INTERNAL_PORT: port(3001),
  /** The worker process's own listener: the SDK's and the worker's metrics, worker health (0: any free port). */
  WORKER_METRICS_PORT: port(9464),
  /** The internal listener's address; unset: loopback for `npm start`, every interface for `npm run api`. */
  INTERNAL_HOST: listenHost,
  /** The worker's listener's address; unset: loopback for `npm start`, every interface for `npm run worker`. */
  WORKER_METRICS_HOST: listenHost,
  /** `name:key,name:key`; parsed below (problems name the entry, never the key). */
  MERCHANT_API_KEYS: optionalString,
  /** Per-merchant settings (JSON, src/config/merchants.ts); read and checked by loadConfig. */
  MERCHANTS_FILE: optionalString,
  // Every merchant's defaults; MERCHANTS_FILE overrides them per merchant.
  MERCHANT_REQUESTS_PER_MINUTE: count(1, DEFAULT_MERCHANT_LIMITS.requestsPerMinute),
  MERCHANT_MAX_LONG_POLLS: count(1, DEFAULT_MERCHANT_LIMITS.maxLongPolls),
  MERCHANT_MIN_POLL_INTERVAL: duration(SETTING_BOUNDS.fastPollIntervalMs),
  MERCHANT_CREATIONS_PER_MINUTE: count(1, DEFAULT_MERCHANT_LIMITS.creationsPerMinute),
  MERCHANT_REFRESHES_PER_MINUTE: count(1, DEFAULT_MERCHANT_LIMITS.refreshesPerMinute),
  MERCHANT_MAX_CONSENTS: count(1, DEFAULT_MERCHANT_LIMITS.maxConsents),
  MERCHANT_MAX_OPEN_APPLICATIONS: count(1, DEFAULT_MERCHANT_LIMITS.maxOpenApplications),
  MERCHANT_MAX_LIVE_PAGES: count(1, DEFAULT_MERCHANT_LIMITS.maxLivePages),
  MERCHANT_CALLBACK_RESENDS_PER_MINUTE: count(1, DEFAULT_MERCHANT_LIMITS.callbackResendsPerMinute),
  /** The operators' keys (/codec and every operator route), same form; never a merchant's key. */
  OPERATOR_API_KEYS: optionalString,
  /** Who gives a consent its owner (src/shared/consent-assignment.ts): auto, operator or merchant. */
  CONSENT_ASSIGNMENT: z.preprocess(
    emptyToUndefined,
    z
      .enum(CONSENT_ASSIGNMENT_SETTINGS, { error: `must be one of ${CONSENT_ASSIGNMENT_SETTINGS.join(', ')}` })
      .default('auto'),
  ),
  /** Failed authentications per client address in 15 minutes (DEFAULT_FAILED_AUTHENTICATIONS). */
  FAILED_AUTHENTICATIONS_PER_15_MINUTES: optionalCount(1),
  /** The former name of FAILED_AUTHENTICATIONS_PER_15_MINUTES (when only the console's sign-in was limited). */
  CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES: optionalCount(1),
  /** Console sessions per merchant; its new one past them ends its own least recently used. */
  CONSOLE_SESSIONS_PER_MERCHANT: count(1, DEFAULT_CONSOLE_SESSIONS_PER_MERCHANT),

  // Temporal: address, namespace, API key and TLS are decided by @temporalio/envconfig from these and from a
  // profile (TEMPORAL_PROFILE of TEMPORAL_CONFIG_FILE): src/temporal/profile.ts. No address from either →
  // the embedded dev server; no namespace from either → "default".
  TEMPORAL_ADDRESS: z.preprocess(
    emptyToUndefined,
    z.string().regex(TEMPORAL_ADDRESS_PATTERN, 'must be host:port, for example localhost:7233').optional(),
  ),
  TEMPORAL_NAMESPACE: optionalString,
  TEMPORAL_PROFILE: optionalString,
  TEMPORAL_CONFIG_FILE: optionalString,
  TASK_QUEUE: z.preprocess(emptyToUndefined, z.string().min(1).default('paylater')),
  // Worker Versioning (src/temporal/worker-deployment.ts): the deployment every worker joins, and the build id
  // (derived from the workflow bundle unless set). Letters, digits, '-' and '_': the CLI writes a version
  // as `{deployment}.{build}`.
  WORKER_DEPLOYMENT_NAME: z.preprocess(
    emptyToUndefined,
    z
      .string()
      .regex(DEPLOYMENT_NAME_PATTERN, 'must be 1 to 100 letters, digits, "-" or "_"')
      .default(DEFAULT_WORKER_DEPLOYMENT_NAME),
  ),
  WORKER_BUILD_ID: z.preprocess(
    emptyToUndefined,
    z.string().regex(DEPLOYMENT_NAME_PATTERN, 'must be 1 to 100 letters, digits, "-" or "_"').optional(),
  ),
  TEMPORAL_UI_PORT: port(8233),
  /** The embedded Web UI's codec gateway, on 127.0.0.1 (src/api/ui-codec-gateway.ts). */
  TEMPORAL_UI_CODEC_PORT: port(8234),
  TEMPORAL_DEV_SERVER_PORT: port(7233),
  TEMPORAL_DATA_DIR: z.preprocess(emptyToUndefined, z.string().default('data')),

  // The bank: unset base URL → the embedded bank sandbox.
  BANK_AUTH_URL: optionalUrl,
  BANK_BASE_URL: optionalUrl,
  BANK_CLIENT_ID: optionalString,
  BANK_CLIENT_SECRET: optionalString,
  SANDBOX_PORT: port(4010),
  /** Ceiling on bank status reads per second across ALL workers (server-side, per task queue). */
  BANK_MAX_READS_PER_SECOND: z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ error: 'must be a number of reads per second' })
      .positive('must be greater than 0')
      .max(100_000, 'must be at most 100000')
      .default(DEFAULT_BANK_MAX_READS_PER_SECOND),
  ),

  // The bank's vocabulary and the lifecycle of new applications (src/shared/application-settings.ts).
  BANK_STATUS_ORDER: optionalList,
  BANK_TERMINAL_STATUSES: optionalList,
  POLL_FAST_INTERVAL: duration(SETTING_BOUNDS.fastPollIntervalMs),
  POLL_RESPONSIVE_WINDOW: duration(SETTING_BOUNDS.responsiveWindowMs),
  POLL_BACKOFF_FACTOR: z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ error: 'must be a number' })
      .min(SETTING_BOUNDS.pollBackoffFactor.min, `must be at least ${SETTING_BOUNDS.pollBackoffFactor.min}`)
      .max(SETTING_BOUNDS.pollBackoffFactor.max, `must be at most ${SETTING_BOUNDS.pollBackoffFactor.max}`)
      .optional(),
  ),
  POLL_SLOW_INTERVAL: duration(SETTING_BOUNDS.slowPollIntervalMs),
  POLL_NO_WEBHOOK_INTERVAL: duration(SETTING_BOUNDS.noWebhookPollIntervalMs),
  APPLICATION_DEADLINE: duration(SETTING_BOUNDS.deadlineMs),
  // Consent refreshes and transactionEvents.
  REFRESH_TIMEOUT: duration(SETTING_BOUNDS.refreshTimeoutMs),
  REFRESH_QUIET_PERIOD: duration(SETTING_BOUNDS.refreshQuietPeriodMs),
  TRANSACTION_EVENTS_WINDOW: duration(SETTING_BOUNDS.transactionEventsWindowMs),

  // Shutdown: the API's drain and the worker's grace (DEFAULT_API_DRAIN_DELAY_MS and below).
  SHUTDOWN_DRAIN_DELAY: duration(SHUTDOWN_BOUNDS),
  SHUTDOWN_GRACE_PERIOD: duration(SHUTDOWN_BOUNDS),
  WORKER_SHUTDOWN_GRACE_TIME: duration(SHUTDOWN_BOUNDS),

  // Worker sizing (one worker process). Unset, the cache follows the memory limit (src/worker/sizing.ts). 0 disables
  // the workflow cache (every workflow task replays its history): for debugging only.
  WORKER_MAX_CACHED_WORKFLOWS: optionalCount(0),
  WORKER_MEMORY_LIMIT: byteSize,
  WORKER_TUNER: z.preprocess(
    emptyToUndefined,
    z.enum(WORKER_TUNERS, { error: `must be one of ${WORKER_TUNERS.join(', ')}` }).default('fixed'),
  ),
  WORKER_TARGET_MEMORY_USAGE: fraction(DEFAULT_WORKER_TARGET_MEMORY_USAGE),
  WORKER_TARGET_CPU_USAGE: fraction(DEFAULT_WORKER_TARGET_CPU_USAGE),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: count(2, DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS),
  WORKER_MAX_CONCURRENT_ACTIVITIES: count(1, DEFAULT_MAX_CONCURRENT_ACTIVITIES),
  // Unset: min(10, the matching slots), as the SDK does. Core refuses fewer than 2 workflow pollers with a cache.
  WORKER_MAX_WORKFLOW_POLLERS: optionalCount(2),
  WORKER_MAX_ACTIVITY_POLLERS: optionalCount(1),

  // Webhooks.
  PUBLIC_BASE_URL: optionalUrl,
  WEBHOOK_HASH_SECRET: z.preprocess(
    emptyToUndefined,
    z.string().min(32, 'must be at least 32 characters (it keys an HMAC)').optional(),
  ),
  /** The secret before the last rotation: its hashes still verify (applications created before it). */
  WEBHOOK_HASH_SECRET_PREVIOUS: z.preprocess(
    emptyToUndefined,
    z.string().min(32, 'must be at least 32 characters (it keys an HMAC)').optional(),
  ),
  WEBHOOK_SECURITY_HEADER: z
    .string()
    .regex(WEBHOOK_SECURITY_HEADER_PATTERN, 'must match [ a-zA-Z0-9=+/]* (the bank accepts nothing else)')
    .default(''),
  /** `true`: run with a real bank whose account webhooks carry no security header (a decision, written down). */
  WEBHOOK_SECURITY_HEADER_WAIVED: z.preprocess(
    emptyToUndefined,
    z
      .enum(['true', 'false'], { error: 'must be true or false' })
      .default('false')
      .transform((v) => v === 'true'),
  ),
  /** Optional merchant endpoint that receives changed accounts of transactionEvents. */
  TRANSACTIONS_CALLBACK_URL: optionalUrl,

  // Merchant callbacks: where they may go, and the Standard Webhooks secrets that sign them (all of them sign).
  CALLBACK_ALLOWED_ORIGINS: allowedOrigins,
  CALLBACK_SIGNING_SECRETS: signingSecrets,
  /** Each merchant's own secret is derived from the first (docs/decisions/0045); every one signs. */
  CALLBACK_SIGNING_MASTER_SECRETS: signingMasters,
  /** The callbacks' body for merchants whose entry in MERCHANTS_FILE does not choose (docs/decisions/0040). */
  /** How long a merchant's callback is retried before it is given up (src/shared/undelivered-callbacks.ts). */
  CALLBACK_RETRY_WINDOW: duration(CALLBACK_RETRY_WINDOW_BOUNDS),
  CALLBACK_PAYLOAD_VERSION: z.preprocess(
    emptyToUndefined,
    z
      .enum(CALLBACK_PAYLOAD_VERSIONS, { error: `must be one of ${CALLBACK_PAYLOAD_VERSIONS.join(', ')}` })
      .default(CURRENT_CALLBACK_PAYLOAD_VERSION),
  ),

  // Customer data in Temporal: the first key encrypts, every key decrypts. Unset: the embedded default's
  // development key (a real bank requires keys).
  PAYLOAD_ENCRYPTION_KEYS: payloadKeys,
  /** Browser origins allowed to call the codec endpoint (the Temporal Web UI); default: the embedded UI's. */
  CODEC_CORS_ORIGINS: origins,

  /** The audit trail (docs/security.md#audit-trail): file:<path> or postgres://…; unset: a file in TEMPORAL_DATA_DIR. */
  AUDIT_LOG: auditLog,

  /** The merchants' payload keys (docs/security.md#a-payload-key-per-merchant): file:<path> or postgres://…. */
  MERCHANT_KEY_STORE: merchantKeyStore,
  MERCHANT_KEY_ENCRYPTION: z.preprocess(
    emptyToUndefined,
    z
      .enum(MERCHANT_KEY_ENCRYPTION_SETTINGS, {
        error: `must be one of ${MERCHANT_KEY_ENCRYPTION_SETTINGS.join(', ')}`,
      })
      .optional(),
  ),
  MERCHANT_KEY_CACHE_TTL: duration(MERCHANT_KEY_CACHE_BOUNDS),
};

/** The schema of one process's environment: `role` decides what a real bank requires (see ConfigRole). */
export const envSchema = (role: ConfigRole) =>
  z.object(ENV_SHAPE).superRefine((env, ctx) => {
    callbackIssues(env, ctx);
    for (const p of resolveServiceSettings(env).problems)
      ctx.addIssue({ code: 'custom', path: [p.variable], message: p.message });
    // The SDK would silently adjust these (or core refuse them with its own option names): say it here instead.
    if (env.WORKER_MAX_CACHED_WORKFLOWS === 1)
      ctx.addIssue({
        code: 'custom',
        path: ['WORKER_MAX_CACHED_WORKFLOWS'],
        message: 'must be 0 (no cache) or at least 2',
      });
    if (
      env.WORKER_MAX_CACHED_WORKFLOWS !== undefined &&
      env.WORKER_MAX_CACHED_WORKFLOWS > 0 &&
      env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS > env.WORKER_MAX_CACHED_WORKFLOWS
    )
      ctx.addIssue({
        code: 'custom',
        path: ['WORKER_MAX_CONCURRENT_WORKFLOW_TASKS'],
        message: `must not exceed WORKER_MAX_CACHED_WORKFLOWS (${env.WORKER_MAX_CACHED_WORKFLOWS}): each running task holds a cached workflow`,
      });
    if (
      env.WORKER_MAX_WORKFLOW_POLLERS !== undefined &&
      env.WORKER_MAX_WORKFLOW_POLLERS > env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS
    )
      ctx.addIssue({
        code: 'custom',
        path: ['WORKER_MAX_WORKFLOW_POLLERS'],
        message: `must not exceed WORKER_MAX_CONCURRENT_WORKFLOW_TASKS (${env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS}): a poll needs a free slot`,
      });
    if (
      env.WORKER_MAX_ACTIVITY_POLLERS !== undefined &&
      env.WORKER_MAX_ACTIVITY_POLLERS > env.WORKER_MAX_CONCURRENT_ACTIVITIES
    )
      ctx.addIssue({
        code: 'custom',
        path: ['WORKER_MAX_ACTIVITY_POLLERS'],
        message: `must not exceed WORKER_MAX_CONCURRENT_ACTIVITIES (${env.WORKER_MAX_CONCURRENT_ACTIVITIES}): a poll needs a free slot`,
      });

    if (env.PORT !== 0 && env.PORT === env.INTERNAL_PORT)
      ctx.addIssue({
        code: 'custom',
        path: ['INTERNAL_PORT'],
        message: `must differ from PORT (${env.PORT}): the bank reaches only the public listener`,
      });
    // npm start serves all three listeners from one process (npm run worker alone never binds PORT).
    if (
      role === 'all' &&
      env.WORKER_METRICS_PORT !== 0 &&
      [env.PORT, env.INTERNAL_PORT].includes(env.WORKER_METRICS_PORT)
    )
      ctx.addIssue({
        code: 'custom',
        path: ['WORKER_METRICS_PORT'],
        message: `must differ from PORT and INTERNAL_PORT (${env.PORT}, ${env.INTERNAL_PORT})`,
      });
    if (env.MERCHANT_API_KEYS !== undefined) {
      for (const problem of parseMerchantApiKeys(env.MERCHANT_API_KEYS).problems)
        ctx.addIssue({ code: 'custom', path: ['MERCHANT_API_KEYS'], message: problem });
    }
    if (env.OPERATOR_API_KEYS !== undefined) {
      const operators = parseOperatorApiKeys(env.OPERATOR_API_KEYS);
      for (const problem of operators.problems)
        ctx.addIssue({ code: 'custom', path: ['OPERATOR_API_KEYS'], message: problem });
      const merchants = env.MERCHANT_API_KEYS === undefined ? [] : parseMerchantApiKeys(env.MERCHANT_API_KEYS).keys;
      // One key in both lists would let a merchant decode every merchant's payloads.
      for (const { merchant, operator } of sharedApiKeys(merchants, operators.keys))
        ctx.addIssue({
          code: 'custom',
          path: ['OPERATOR_API_KEYS'],
          message: `"${operator}" has the same key as MERCHANT_API_KEYS's "${merchant}": an operator key must not be a merchant's`,
        });
    }
    if (env.WEBHOOK_HASH_SECRET_PREVIOUS !== undefined && env.WEBHOOK_HASH_SECRET_PREVIOUS === env.WEBHOOK_HASH_SECRET)
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_HASH_SECRET_PREVIOUS'],
        message: 'must differ from WEBHOOK_HASH_SECRET (it is the secret before the rotation)',
      });
    if (env.WEBHOOK_SECURITY_HEADER_WAIVED && env.WEBHOOK_SECURITY_HEADER.trim() !== '')
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_SECURITY_HEADER_WAIVED'],
        message: 'must not be true while WEBHOOK_SECURITY_HEADER is set (the header is checked): remove one',
      });

    if (!env.BANK_BASE_URL) {
      if (env.BANK_AUTH_URL)
        ctx.addIssue({ code: 'custom', path: ['BANK_BASE_URL'], message: 'is required when BANK_AUTH_URL is set' });
      return;
    }
    // Talking to a real bank: no development defaults.
    for (const key of [
      'BANK_AUTH_URL',
      'BANK_CLIENT_ID',
      'BANK_CLIENT_SECRET',
      'PUBLIC_BASE_URL',
      'WEBHOOK_HASH_SECRET',
      'PAYLOAD_ENCRYPTION_KEYS',
      ...(role === 'worker' ? [] : (['MERCHANT_API_KEYS', 'OPERATOR_API_KEYS'] as const)),
    ] as const) {
      if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required when BANK_BASE_URL is set' });
    }
    if (role !== 'worker' && env.WEBHOOK_SECURITY_HEADER.trim() === '' && !env.WEBHOOK_SECURITY_HEADER_WAIVED)
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_SECURITY_HEADER'],
        message:
          "is required when BANK_BASE_URL is set (set the same value as the bank's Webhook Security Header), " +
          'or set WEBHOOK_SECURITY_HEADER_WAIVED=true to accept account webhooks without one',
      });
    // The header is the only thing authenticating account webhooks: a short one is guessable (the value is never echoed).
    const headerLength = env.WEBHOOK_SECURITY_HEADER.trim().length;
    if (role !== 'worker' && headerLength > 0 && headerLength < MIN_SECURITY_HEADER_LENGTH)
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_SECURITY_HEADER'],
        message: `must be at least ${MIN_SECURITY_HEADER_LENGTH} characters when BANK_BASE_URL is set (it has ${headerLength})`,
      });
  });

export type Env = z.infer<ReturnType<typeof envSchema>>;

function callbackIssues(
  env: {
    BANK_BASE_URL?: string;
    TRANSACTIONS_CALLBACK_URL?: string;
    CALLBACK_ALLOWED_ORIGINS?: string[];
    CALLBACK_SIGNING_SECRETS?: string[];
    CALLBACK_SIGNING_MASTER_SECRETS?: string[];
  },
  ctx: z.RefinementCtx,
): void {
  const embedded = !env.BANK_BASE_URL;
  if (env.TRANSACTIONS_CALLBACK_URL) {
    const verdict = checkCallbackUrl(
      env.TRANSACTIONS_CALLBACK_URL,
      callbackAllowList(env.CALLBACK_ALLOWED_ORIGINS, embedded),
    );
    if (!verdict.allowed)
      ctx.addIssue({
        code: 'custom',
        path: ['TRANSACTIONS_CALLBACK_URL'],
        message: `${verdict.reason} (add ${verdict.origin ?? 'its origin'} to ${CALLBACK_ALLOWED_ORIGINS})`,
      });
  }
  // One way of signing per deployment (docs/decisions/0045): a secret per merchant derived from a master, or one
  // explicit secret, which start-up lets sign for one merchant only (src/config/merchants.ts).
  if (env.CALLBACK_SIGNING_SECRETS && env.CALLBACK_SIGNING_MASTER_SECRETS)
    ctx.addIssue({
      code: 'custom',
      path: [CALLBACK_SIGNING_SECRETS],
      message:
        `cannot be set beside ${CALLBACK_SIGNING_MASTER_SECRETS}: unset it, and each merchant signs with its own ` +
        `secret derived from ${CALLBACK_SIGNING_MASTER_SECRETS} (docs/security.md#signed-merchant-callbacks)`,
    });
  const callbacksConfigured = (env.CALLBACK_ALLOWED_ORIGINS?.length ?? 0) > 0 || !!env.TRANSACTIONS_CALLBACK_URL;
  if (!embedded && callbacksConfigured && !env.CALLBACK_SIGNING_SECRETS && !env.CALLBACK_SIGNING_MASTER_SECRETS)
    ctx.addIssue({
      code: 'custom',
      path: [CALLBACK_SIGNING_MASTER_SECRETS],
      message: `is required when BANK_BASE_URL is set and callbacks are configured (${CALLBACK_ALLOWED_ORIGINS} or TRANSACTIONS_CALLBACK_URL); or, for one merchant, ${CALLBACK_SIGNING_SECRETS}`,
    });
}

export class ConfigError extends Error {
  constructor(readonly issues: ConfigIssue[]) {
    super(
      `Invalid configuration:\n${issues.map((i) => `  - ${i.variable}: ${i.message}`).join('\n')}\n` +
        'See .env.example and docs/configuration.md.' +
        (issues.some((i) => i.variable === 'MERCHANTS_FILE')
          ? " MERCHANTS_FILE's format: docs/merchant-api.md#merchants."
          : ''),
    );
    this.name = 'ConfigError';
  }
}

/** A process that reads the configuration: `npm start` (main), `npm run api`, `npm run worker`. */
export type ConfigProcess = 'start' | 'api' | 'worker';

/** What docs/configuration.md says of a variable (`npm run docs:config` writes the table from this and ENV_SHAPE). */
export interface VariableDoc {
  /** The processes that use it. */
  processes: readonly ConfigProcess[];
  description: string;
  /** The default in words, where the schema's alone (unset, or a fixed value) does not say it. */
  default?: string;
}

const ALL: readonly ConfigProcess[] = ['start', 'api', 'worker'];
const START_API: readonly ConfigProcess[] = ['start', 'api'];
const START_WORKER: readonly ConfigProcess[] = ['start', 'worker'];
const WITH_REAL_BANK = 'required with a real bank';
const code = (v: string | number): string => `\`${v}\``;
const ms = (v: number): string => code(formatDuration(v));
const APP = DEFAULT_SERVICE_SETTINGS.applications;

/** Every variable of ENV_SHAPE, documented (the type makes a missing one a compile error). */
export const VARIABLES: Record<keyof typeof ENV_SHAPE, VariableDoc> = {
  NODE_ENV: { processes: ALL, description: 'Node environment name', default: '`development`' },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    processes: ALL,
    description: 'base URL of an OTLP collector; spans go to `<endpoint>/v1/traces` (tracing is off when unset)',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { processes: ALL, description: 'full URL for traces (wins over the above)' },
  OTEL_EXPORTER_OTLP_PROTOCOL: { processes: ALL, description: '`http/protobuf` or `http/json`; `grpc` is refused' },
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: {
    processes: ALL,
    description: 'the same, for traces only (wins over the above)',
  },
  OTEL_SERVICE_NAME: {
    processes: ALL,
    description: 'service name of the spans',
    default: '`paylater`, `paylater-api` or `paylater-worker` by entry point',
  },
  OTEL_SDK_DISABLED: { processes: ALL, description: '`true`: tracing off even with an endpoint' },
  LOG_FORMAT: { processes: ALL, description: '`json` or `pretty`', default: 'pretty on a terminal, JSON otherwise' },
  LOG_LEVEL: { processes: ALL, description: 'pino level' },
  PORT: { processes: START_API, description: "the public listener: the bank's webhooks, `/healthz`" },
  INTERNAL_PORT: {
    processes: START_API,
    description: 'the internal listener: merchant facade, `/readyz`, `/metrics`, `/codec`; must differ from `PORT`',
  },
  WORKER_METRICS_PORT: {
    processes: START_WORKER,
    description: "the worker's Prometheus `/metrics`, `/healthz` and `/readyz`; `0`: a free port",
  },
  INTERNAL_HOST: {
    processes: START_API,
    description: "the internal listener's address (an IP); merchants and operators reach it, never the internet",
    default: '`127.0.0.1` (`npm start`), `0.0.0.0` (`npm run api`)',
  },
  WORKER_METRICS_HOST: {
    processes: START_WORKER,
    description: "the worker's listener's address (an IP); not merchant-facing: the monitoring network only",
    default: '`127.0.0.1` (`npm start`), `0.0.0.0` (`npm run worker`)',
  },
  MERCHANT_API_KEYS: {
    processes: ALL,
    description: "`name:key,name:key`: each merchant's key of the facade (the names are the merchant ids)",
    default: `embedded: a key generated and printed at start-up; ${WITH_REAL_BANK} (API processes)`,
  },
  MERCHANTS_FILE: {
    processes: ALL,
    description:
      'per-merchant settings (JSON) over the globals below; format: [merchant-api.md](merchant-api.md#merchants)',
  },
  MERCHANT_REQUESTS_PER_MINUTE: { processes: START_API, description: "every merchant's request budget per minute" },
  MERCHANT_MAX_LONG_POLLS: { processes: START_API, description: "every merchant's long polls open at once" },
  MERCHANT_MIN_POLL_INTERVAL: {
    processes: START_API,
    description: 'the shortest poll interval a merchant may ask for (a duration)',
    default: ms(DEFAULT_MERCHANT_LIMITS.minPollIntervalMs),
  },
  MERCHANT_CREATIONS_PER_MINUTE: {
    processes: START_API,
    description: "every merchant's applications created (`POST /applications`) per minute",
  },
  MERCHANT_REFRESHES_PER_MINUTE: {
    processes: START_API,
    description: "every merchant's consent refreshes started (`POST /consents/{id}/refresh`) per minute",
  },
  MERCHANT_MAX_CONSENTS: {
    processes: START_API,
    description: "every merchant's consents claimed at once (counted in Temporal, across API processes)",
  },
  MERCHANT_MAX_OPEN_APPLICATIONS: {
    processes: START_API,
    description: "every merchant's applications open at once (counted in Temporal, across API processes)",
  },
  MERCHANT_MAX_LIVE_PAGES: {
    processes: START_API,
    description: "every merchant's console live pages waiting for a change at once",
  },
  MERCHANT_CALLBACK_RESENDS_PER_MINUTE: {
    processes: START_API,
    description: "every merchant's pace of a bulk callback resend (callbacks sent again per minute)",
  },
  OPERATOR_API_KEYS: {
    processes: START_API,
    description: "`name:key,…` for `/codec` and the operator routes; never a merchant's key",
    default: `embedded: a key generated and printed at start-up; ${WITH_REAL_BANK}`,
  },
  CONSENT_ASSIGNMENT: {
    processes: START_API,
    // Details: docs/decisions/0046-consents-assigned-by-an-operator.md.
    description: 'who owns a consent: `operator` assigns it, `merchant` claims it; `auto`: `merchant` if only one',
  },
  FAILED_AUTHENTICATIONS_PER_15_MINUTES: {
    processes: START_API,
    description: 'wrong keys per client address in 15 minutes (API, `/codec`, `/console` sign-in together); then 429',
    default: `${code(DEFAULT_FAILED_AUTHENTICATIONS)} (or \`CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES\`)`,
  },
  CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES: {
    processes: START_API,
    description: 'deprecated: the former name of `FAILED_AUTHENTICATIONS_PER_15_MINUTES`, read when that is unset',
  },
  CONSOLE_SESSIONS_PER_MERCHANT: {
    processes: START_API,
    description: "`/console` sessions per merchant; a new one past them ends the merchant's least recently used",
  },
  TEMPORAL_ADDRESS: {
    processes: ALL,
    description: '`host:port` of a Temporal cluster; `npm run worker` and `npm run api` require one',
    default: "the profile's; neither: the embedded dev server",
  },
  TEMPORAL_NAMESPACE: { processes: ALL, description: 'namespace', default: "the profile's, else `default`" },
  TEMPORAL_PROFILE: {
    processes: ALL,
    description: 'the Temporal CLI profile giving address, namespace, API key, TLS (the variables win over it)',
    default: '`default`',
  },
  TEMPORAL_CONFIG_FILE: {
    processes: ALL,
    description: "the profiles' TOML file",
    default: '`~/.config/temporalio/temporal.toml`',
  },
  TASK_QUEUE: { processes: ALL, description: "the workers' task queue (bank reads: `<TASK_QUEUE>-bank-reads`)" },
  WORKER_DEPLOYMENT_NAME: { processes: START_WORKER, description: 'the Worker Deployment every worker joins' },
  WORKER_BUILD_ID: {
    processes: START_WORKER,
    description: "the worker's build id",
    default: "the workflow bundle's (`wf-…`)",
  },
  TEMPORAL_UI_PORT: { processes: START_API, description: "the embedded dev server's Web UI (and the codec's CORS)" },
  TEMPORAL_UI_CODEC_PORT: {
    processes: ['start'],
    description: "the embedded Web UI's codec gateway on 127.0.0.1 (decodes for the UI as the operator `web-ui`)",
  },
  TEMPORAL_DEV_SERVER_PORT: { processes: ['start'], description: 'the embedded dev server' },
  TEMPORAL_DATA_DIR: { processes: ['start'], description: "the embedded dev server's and sandbox's data" },
  BANK_AUTH_URL: { processes: START_WORKER, description: '`{auth_url}` of docs/bank-interface.md' },
  BANK_BASE_URL: {
    processes: ALL,
    description: '`{base_url}` of docs/bank-interface.md: set, a real bank (secrets required)',
    default: 'unset: the embedded bank sandbox',
  },
  BANK_CLIENT_ID: {
    processes: START_WORKER,
    description: 'OAuth2 client id',
    default: `the sandbox's when embedded; ${WITH_REAL_BANK}`,
  },
  BANK_CLIENT_SECRET: {
    processes: START_WORKER,
    description: 'OAuth2 client secret',
    default: `the sandbox's when embedded; ${WITH_REAL_BANK}`,
  },
  SANDBOX_PORT: { processes: ['start'], description: 'the embedded bank sandbox' },
  BANK_MAX_READS_PER_SECOND: {
    processes: START_WORKER,
    description: "bank status reads per second across all workers (the bank-reads queue's rate limit)",
  },
  BANK_STATUS_ORDER: {
    processes: START_API,
    description: "the bank's application statuses in order (terminal ones last)",
    default: code(DEFAULT_STATUS_ORDER.join(',')),
  },
  BANK_TERMINAL_STATUSES: {
    processes: START_API,
    description: 'the statuses that end an application',
    default: code(DEFAULT_TERMINAL_STATUSES.join(',')),
  },
  POLL_FAST_INTERVAL: {
    processes: START_API,
    description: 'poll interval of a new application (1s–1h)',
    default: ms(APP.fastPollIntervalMs),
  },
  POLL_RESPONSIVE_WINDOW: {
    processes: START_API,
    description: 'how long polls stay fast after a change (0–1d)',
    default: ms(APP.responsiveWindowMs),
  },
  POLL_BACKOFF_FACTOR: {
    processes: START_API,
    description: 'growth of the interval after it (1–10)',
    default: code(APP.pollBackoffFactor),
  },
  POLL_SLOW_INTERVAL: {
    processes: START_API,
    description: 'the longest interval (1s–1d)',
    default: ms(APP.slowPollIntervalMs),
  },
  POLL_NO_WEBHOOK_INTERVAL: {
    processes: START_API,
    description: 'the interval while no webhook reaches the service (1s–1d)',
    default: ms(APP.noWebhookPollIntervalMs),
  },
  APPLICATION_DEADLINE: {
    processes: START_API,
    description: 'stop following an application this long after it started (1m–365d)',
    default: ms(APP.deadlineMs),
  },
  REFRESH_TIMEOUT: {
    processes: START_API,
    description: 'a consent refresh gives up after this (1s–1d)',
    default: ms(DEFAULT_SERVICE_SETTINGS.refresh.timeoutMs),
  },
  REFRESH_QUIET_PERIOD: {
    processes: START_API,
    description: 'a consent refresh ends after this long without a report (100ms–1d)',
    default: ms(DEFAULT_SERVICE_SETTINGS.refresh.quietPeriodMs),
  },
  TRANSACTION_EVENTS_WINDOW: {
    processes: START_API,
    description: 'how long transactionEvents coalesces a burst before its one callback (100ms–1h)',
    default: ms(DEFAULT_SERVICE_SETTINGS.transactionEvents.coalesceWindowMs),
  },
  SHUTDOWN_DRAIN_DELAY: {
    processes: START_API,
    description: 'on SIGTERM, `/readyz` 503 while still serving, for this long',
    default: `${ms(DEFAULT_API_DRAIN_DELAY_MS)} (\`npm run api\`), \`0\` (\`npm start\`)`,
  },
  SHUTDOWN_GRACE_PERIOD: {
    processes: START_API,
    description: 'then, requests in flight get this long',
    default: ms(DEFAULT_SHUTDOWN_GRACE_PERIOD_MS),
  },
  WORKER_SHUTDOWN_GRACE_TIME: {
    processes: START_WORKER,
    description: 'on SIGTERM, running activities get this long, then are cancelled and retried elsewhere',
    default: ms(DEFAULT_WORKER_SHUTDOWN_GRACE_MS),
  },
  WORKER_MAX_CACHED_WORKFLOWS: {
    processes: START_WORKER,
    description:
      'workflows a worker keeps in memory; `0` disables the cache (debugging only); unset: from the memory limit, 0.6 MiB each (docs/operations.md#sizing-a-worker)',
    default: 'from the memory limit; 500 with none',
  },
  WORKER_MEMORY_LIMIT: {
    processes: START_WORKER,
    description: 'the memory a worker may use (`768Mi`, `2Gi`, bytes): sizes its workflow cache',
    default: 'the smallest of the cgroup limit and `--max-old-space-size`; none',
  },
  WORKER_TUNER: {
    processes: START_WORKER,
    description:
      '`fixed`: the slot counts below; `resource-based`: the SDK hands out slots while memory and CPU stay under their targets, up to those counts',
  },
  WORKER_TARGET_MEMORY_USAGE: {
    processes: START_WORKER,
    description: 'with `resource-based`: the share of memory (the cgroup limit or the machine) to stay under',
  },
  WORKER_TARGET_CPU_USAGE: {
    processes: START_WORKER,
    description: 'with `resource-based`: the share of CPU to stay under',
  },
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: { processes: START_WORKER, description: 'workflow task slots of a worker' },
  WORKER_MAX_CONCURRENT_ACTIVITIES: { processes: START_WORKER, description: 'activity slots, per task queue' },
  WORKER_MAX_WORKFLOW_POLLERS: {
    processes: START_WORKER,
    description: 'workflow task long polls',
    default: 'min(10, the slots)',
  },
  WORKER_MAX_ACTIVITY_POLLERS: {
    processes: START_WORKER,
    description: 'activity task long polls, per task queue',
    default: 'min(10, the slots)',
  },
  PUBLIC_BASE_URL: {
    processes: START_WORKER,
    description: "where the bank reaches the receiver; prefix of each application's `webhookUrl`",
    default: `\`http://localhost:$PORT\`; ${WITH_REAL_BANK}`,
  },
  WEBHOOK_HASH_SECRET: {
    processes: ALL,
    description: 'keys the HMAC in each `webhookUrl` (at least 32 characters)',
    default: `a development value; ${WITH_REAL_BANK}`,
  },
  WEBHOOK_HASH_SECRET_PREVIOUS: {
    processes: START_API,
    description: 'during a rotation, the previous secret: its hashes still verify',
  },
  WEBHOOK_SECURITY_HEADER: {
    processes: START_API,
    description: "the bank's Webhook Security Header, checked on every account webhook",
    default: `empty; ${WITH_REAL_BANK} (API processes) unless waived`,
  },
  WEBHOOK_SECURITY_HEADER_WAIVED: {
    processes: START_API,
    description: '`true`: accept account webhooks without a security header from a real bank',
  },
  TRANSACTIONS_CALLBACK_URL: {
    processes: ALL,
    description: "one merchant's endpoint for changed accounts and late bank reports (several: MERCHANTS_FILE)",
  },
  CALLBACK_ALLOWED_ORIGINS: {
    processes: ALL,
    description: "origins one merchant's callbacks may go to (several merchants: MERCHANTS_FILE)",
    default: 'loopback when embedded and one merchant; none with a real bank',
  },
  CALLBACK_SIGNING_SECRETS: {
    processes: ALL,
    description: "`whsec_` secrets signing a one-merchant deployment's callbacks (each signs); else the master below",
  },
  CALLBACK_SIGNING_MASTER_SECRETS: {
    processes: ALL,
    description: "masters (32+ characters) each merchant's own callback secret derives from; the first is shown",
    default: 'embedded: a public development master; required with a real bank for callbacks',
  },
  CALLBACK_RETRY_WINDOW: {
    processes: START_WORKER,
    description: "how long a merchant's callback is retried before it is given up (a duration); see MERCHANTS_FILE",
    default: ms(DEFAULT_CALLBACK_RETRY_WINDOW_MS),
  },
  CALLBACK_PAYLOAD_VERSION: {
    processes: START_WORKER,
    description: "callbacks' body: `2026-11-25` (Standard Webhooks) or `legacy` (deprecated); see MERCHANTS_FILE",
  },
  PAYLOAD_ENCRYPTION_KEYS: {
    processes: ALL,
    description: '`keyId:<base64 of 32 bytes>,…`: the first encrypts Temporal payloads, every one decrypts',
    default: `embedded: a public development key (warned); ${WITH_REAL_BANK}`,
  },
  CODEC_CORS_ORIGINS: {
    processes: START_API,
    description: 'browser origins of a Temporal Web UI allowed to call `/codec`',
    default: 'the embedded Web UI',
  },
  AUDIT_LOG: {
    processes: START_API,
    description:
      'the audit trail: `file:<path>` (one process) or `postgres://user:password@host:5432/db` (several API ' +
      'processes); also read by `npm run deploy` and `npm run audit:verify`',
    default: '`file:<TEMPORAL_DATA_DIR>/audit/audit.jsonl`',
  },
  MERCHANT_KEY_STORE: {
    processes: ALL,
    description:
      "the merchants' payload keys, wrapped by PAYLOAD_ENCRYPTION_KEYS: `file:<path>` (one machine) or " +
      '`postgres://user:password@host:5432/db` (several hosts); also read by `npm run erase-merchant`',
    default: '`file:<TEMPORAL_DATA_DIR>/keys/merchant-keys.json`',
  },
  MERCHANT_KEY_ENCRYPTION: {
    processes: ALL,
    description:
      "`on`: a merchant's payloads are written under its own key; `decrypt-only`: read them, write under the master (a rollout's first step)",
    default:
      '`on` with MERCHANT_KEY_STORE set; else `decrypt-only` (a per-container file is no shared store; the typed client reads with the master keys)',
  },
  MERCHANT_KEY_CACHE_TTL: {
    processes: ALL,
    description: "how long a process keeps a merchant's unwrapped keys (or its erasure) before reading the store again",
    default: ms(DEFAULT_MERCHANT_KEY_CACHE_TTL_MS),
  },
};
