import { z } from 'zod';
import {
  DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS,
  parsePayloadEncryptionKeys,
  type PayloadEncryptionKey,
} from '../security/payload-codec';
import {
  generateApiKey,
  parseMerchantApiKeys,
  parseOperatorApiKeys,
  sharedApiKeys,
  type MerchantApiKey,
  type OperatorApiKey,
} from '../security/api-keys';
import { WEBHOOK_SECURITY_HEADER_PATTERN } from '../shared/bank-wire';
import {
  CALLBACK_ALLOWED_ORIGINS,
  checkCallbackUrl,
  parseAllowedOrigins,
  type CallbackAllowList,
} from '../security/callback-url';
import { DEVELOPMENT_SIGNING_SECRET, signingSecretProblem } from '../security/callback-signature';
import {
  DEFAULT_SERVICE_SETTINGS,
  DEFAULT_STATUS_ORDER,
  DEFAULT_TERMINAL_STATUSES,
  formatDuration,
  parseDurationMs,
  pollSettingsProblems,
  SETTING_BOUNDS,
  statusVocabulary,
  type Bounds,
  type ServiceSettings,
} from '../shared/application-settings';
import {
  buildMerchantDirectory,
  DEFAULT_MERCHANT_LIMITS,
  readMerchantsFile,
  type MerchantDirectory,
} from './merchants';
import { resolveTemporalProfile, TEMPORAL_ADDRESS_PATTERN, type TemporalProfile } from '../temporal/profile';
import { DEFAULT_WORKER_DEPLOYMENT_NAME, DEPLOYMENT_NAME_PATTERN } from '../temporal/worker-deployment';

/**
 * The whole environment in one zod schema (DESIGN.md "Environment"). loadConfig(env) is called only by
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
 * Merchant callbacks: CALLBACK_ALLOWED_ORIGINS unset allows loopback origins on the embedded stack and nothing
 * with a real bank; CALLBACK_SIGNING_SECRETS unset signs with a development secret on the embedded stack and is
 * required with a real bank once callbacks can go anywhere (an allow-list or TRANSACTIONS_CALLBACK_URL).
 */

const DEV_DEFAULTS = {
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

/**
 * Workflow cache of one worker process. The SDK's default grows with the heap (≈600 per GiB over 200 MiB:
 * 2,310 with a 4 GiB heap), and RSS grows with the cache: a worker holding 10,000 open applications,
 * all woken once, peaked at 1,261 MiB with 2,310, 995 MiB with 1,000 and 689 MiB with 500
 * (`npm run bench -- worker-memory`). 500 keeps a worker under 1 GiB with room to spare, whatever the heap;
 * an evicted application costs one replay of its short history (continue-as-new bounds it) when it next wakes.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 500;
/** The SDK's own defaults, written out so the configuration shows what a worker runs with. */
export const DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS = 40;
export const DEFAULT_MAX_CONCURRENT_ACTIVITIES = 100;
/** The SDK's poller default: min(10, slots); more pollers than slots only wait for a slot. */
const DEFAULT_MAX_POLLERS = 10;
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

/** OTLP trace export; undefined when tracing is off. */
export interface TracingConfig {
  /** Where spans are posted (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces). */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_SERVICE_NAME; undefined: the entry point's name. */
  serviceName?: string;
}

type ObservabilityEnv = z.infer<z.ZodObject<typeof OBSERVABILITY_ENV>>;

function tracingFromEnv(e: ObservabilityEnv): TracingConfig | undefined {
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

const envSchema = (role: ConfigRole) =>
  z
    .object({
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
      /** `name:key,name:key`; parsed below (problems name the entry, never the key). */
      MERCHANT_API_KEYS: optionalString,
      /** Per-merchant settings (JSON, src/config/merchants.ts); read and checked by loadConfig. */
      MERCHANTS_FILE: optionalString,
      /** The merchant that owns the workflows started before tenancy; default: MERCHANT_API_KEYS' first. */
      LEGACY_MERCHANT: optionalString,
      // Every merchant's defaults; MERCHANTS_FILE overrides them per merchant.
      MERCHANT_REQUESTS_PER_MINUTE: count(1, DEFAULT_MERCHANT_LIMITS.requestsPerMinute),
      MERCHANT_MAX_LONG_POLLS: count(1, DEFAULT_MERCHANT_LIMITS.maxLongPolls),
      MERCHANT_MIN_POLL_INTERVAL: duration(SETTING_BOUNDS.fastPollIntervalMs),
      /** The operators' keys (/codec and every operator route), same form; never a merchant's key. */
      OPERATOR_API_KEYS: optionalString,

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

      // Worker sizing (one worker process; see DEFAULT_MAX_CACHED_WORKFLOWS). 0 disables the workflow cache
      // (every workflow task replays its history): for debugging only.
      WORKER_MAX_CACHED_WORKFLOWS: count(0, DEFAULT_MAX_CACHED_WORKFLOWS),
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

      // Customer data in Temporal: the first key encrypts, every key decrypts. Unset: the embedded default's
      // development key (a real bank requires keys).
      PAYLOAD_ENCRYPTION_KEYS: payloadKeys,
      /** Browser origins allowed to call the codec endpoint (the Temporal Web UI); default: the embedded UI's. */
      CODEC_CORS_ORIGINS: origins,
    })
    .superRefine((env, ctx) => {
      callbackIssues(env, ctx);
      settingsIssues(env, ctx);
      // The SDK would silently adjust these (or core refuse them with its own option names): say it here instead.
      if (env.WORKER_MAX_CACHED_WORKFLOWS === 1)
        ctx.addIssue({
          code: 'custom',
          path: ['WORKER_MAX_CACHED_WORKFLOWS'],
          message: 'must be 0 (no cache) or at least 2',
        });
      if (
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
      if (
        env.WEBHOOK_HASH_SECRET_PREVIOUS !== undefined &&
        env.WEBHOOK_HASH_SECRET_PREVIOUS === env.WEBHOOK_HASH_SECRET
      )
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

/** The environment's settings of new workflows: the defaults overridden by whatever is set. */
function serviceSettings(env: Env): ServiceSettings {
  const d = DEFAULT_SERVICE_SETTINGS;
  const { vocabulary } = statusVocabulary(
    env.BANK_STATUS_ORDER ?? DEFAULT_STATUS_ORDER,
    env.BANK_TERMINAL_STATUSES ?? DEFAULT_TERMINAL_STATUSES,
  );
  return {
    applications: {
      fastPollIntervalMs: env.POLL_FAST_INTERVAL ?? d.applications.fastPollIntervalMs,
      responsiveWindowMs: env.POLL_RESPONSIVE_WINDOW ?? d.applications.responsiveWindowMs,
      pollBackoffFactor: env.POLL_BACKOFF_FACTOR ?? d.applications.pollBackoffFactor,
      slowPollIntervalMs: env.POLL_SLOW_INTERVAL ?? d.applications.slowPollIntervalMs,
      noWebhookPollIntervalMs: env.POLL_NO_WEBHOOK_INTERVAL ?? d.applications.noWebhookPollIntervalMs,
      deadlineMs: env.APPLICATION_DEADLINE ?? d.applications.deadlineMs,
      ...vocabulary,
    },
    refresh: {
      timeoutMs: env.REFRESH_TIMEOUT ?? d.refresh.timeoutMs,
      quietPeriodMs: env.REFRESH_QUIET_PERIOD ?? d.refresh.quietPeriodMs,
    },
    transactionEvents: { coalesceWindowMs: env.TRANSACTION_EVENTS_WINDOW ?? d.transactionEvents.coalesceWindowMs },
  };
}

/** The vocabulary's consistency and the poll intervals' order, each problem naming its variable. */
function settingsIssues(
  env: {
    BANK_STATUS_ORDER?: string[];
    BANK_TERMINAL_STATUSES?: string[];
    POLL_FAST_INTERVAL?: number;
    POLL_SLOW_INTERVAL?: number;
    POLL_NO_WEBHOOK_INTERVAL?: number;
  },
  ctx: z.RefinementCtx,
): void {
  const { problems } = statusVocabulary(
    env.BANK_STATUS_ORDER ?? DEFAULT_STATUS_ORDER,
    env.BANK_TERMINAL_STATUSES ?? DEFAULT_TERMINAL_STATUSES,
  );
  for (const p of problems) {
    const variable = p.list === 'order' ? 'BANK_STATUS_ORDER' : 'BANK_TERMINAL_STATUSES';
    // A default list is never the culprit: name the one that was set.
    const setOne =
      env.BANK_STATUS_ORDER === undefined
        ? 'BANK_TERMINAL_STATUSES'
        : env.BANK_TERMINAL_STATUSES === undefined
          ? 'BANK_STATUS_ORDER'
          : variable;
    ctx.addIssue({ code: 'custom', path: [setOne], message: p.message });
  }
  const d = DEFAULT_SERVICE_SETTINGS.applications;
  const intervals = {
    fastPollIntervalMs: env.POLL_FAST_INTERVAL ?? d.fastPollIntervalMs,
    slowPollIntervalMs: env.POLL_SLOW_INTERVAL ?? d.slowPollIntervalMs,
    noWebhookPollIntervalMs: env.POLL_NO_WEBHOOK_INTERVAL ?? d.noWebhookPollIntervalMs,
  };
  for (const p of pollSettingsProblems(intervals)) {
    const variable = p.field === 'slowPollIntervalMs' ? 'POLL_SLOW_INTERVAL' : 'POLL_NO_WEBHOOK_INTERVAL';
    ctx.addIssue({ code: 'custom', path: [variable], message: `${p.message}: see POLL_FAST_INTERVAL` });
  }
}

/** The allow-list in force: the configured origins; unset, loopback on the embedded stack and nothing otherwise. */
function callbackAllowList(origins: string[] | undefined, embedded: boolean): CallbackAllowList {
  return { origins: origins ?? [], loopback: origins === undefined && embedded };
}

function callbackIssues(
  env: {
    BANK_BASE_URL?: string;
    TRANSACTIONS_CALLBACK_URL?: string;
    CALLBACK_ALLOWED_ORIGINS?: string[];
    CALLBACK_SIGNING_SECRETS?: string[];
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
  const callbacksConfigured = (env.CALLBACK_ALLOWED_ORIGINS?.length ?? 0) > 0 || !!env.TRANSACTIONS_CALLBACK_URL;
  if (!embedded && callbacksConfigured && !env.CALLBACK_SIGNING_SECRETS)
    ctx.addIssue({
      code: 'custom',
      path: ['CALLBACK_SIGNING_SECRETS'],
      message: `is required when BANK_BASE_URL is set and callbacks are configured (${CALLBACK_ALLOWED_ORIGINS} or TRANSACTIONS_CALLBACK_URL)`,
    });
}

/** Sizing of one worker process (Worker options; src/worker/main.ts applies them). */
export interface WorkerTuning {
  /** maxCachedWorkflows (main worker: the only one with workflows). */
  maxCachedWorkflows: number;
  /** maxConcurrentWorkflowTaskExecutions (main worker). */
  maxConcurrentWorkflowTaskExecutions: number;
  /** maxConcurrentActivityTaskExecutions, for each of the process's workers. */
  maxConcurrentActivityTaskExecutions: number;
  /** workflowTaskPollerBehavior's simple maximum (main worker). */
  maxWorkflowTaskPollers: number;
  /** activityTaskPollerBehavior's simple maximum, for each of the process's workers. */
  maxActivityTaskPollers: number;
}

export interface Config {
  nodeEnv: string;
  logLevel: Env['LOG_LEVEL'];
  /** LOG_FORMAT; undefined: pretty on a terminal, JSON otherwise. */
  logFormat?: 'json' | 'pretty';
  /** OTLP tracing (OTEL_*); undefined: off. */
  tracing?: TracingConfig;
  /** The public listener's port (PORT): the bank's webhooks and /healthz. */
  port: number;
  /** The internal listener's port (INTERNAL_PORT): merchant facade, /readyz, /metrics. */
  internalPort: number;
  /** The worker's metrics and health port (WORKER_METRICS_PORT, src/worker/metrics.ts); 0: a free port. */
  workerMetricsPort: number;
  /** Keys of the merchant facade (MERCHANT_API_KEYS); `generated`: a development key made for this run. */
  merchantApiKeys: { keys: MerchantApiKey[]; generated: boolean };
  /** Each merchant's settings (MERCHANTS_FILE over the globals) and the owner of pre-tenancy workflows. */
  merchants: MerchantDirectory;
  /** Keys of the operator routes, /codec (OPERATOR_API_KEYS); `generated`: a development key made for this run. */
  operatorApiKeys: { keys: OperatorApiKey[]; generated: boolean };
  temporal: {
    /** From TEMPORAL_ADDRESS or the profile; undefined: start the embedded dev server. */
    address?: string;
    /** From TEMPORAL_NAMESPACE or the profile; "default" when neither sets it. */
    namespace: string;
    /** What the address came from, whether an API key and TLS are on (for the start-up log; no secret). */
    connection: Pick<TemporalProfile, 'addressFrom' | 'apiKey' | 'tls'>;
    taskQueue: string;
    /** WORKER_DEPLOYMENT_NAME, and WORKER_BUILD_ID (undefined: buildIdOf the workflow bundle's inputs). */
    deployment: { name: string; buildId?: string };
    devServer: { port: number; uiPort: number; dataDir: string };
  };
  bank: {
    /** True when the bank sandbox is started in-process (BANK_BASE_URL unset). */
    embedded: boolean;
    authUrl?: string;
    baseUrl?: string;
    clientId: string;
    clientSecret: string;
    sandboxPort: number;
    /** Ceiling on status reads per second across all workers (maxTaskQueueActivitiesPerSecond of the bank-reads queue). */
    maxReadsPerSecond: number;
  };
  worker: WorkerTuning;
  /** Shutdown (DEFAULT_API_DRAIN_DELAY_MS): the API's drain, and the worker's grace for running activities. */
  shutdown: {
    /** SHUTDOWN_DRAIN_DELAY: /readyz 503, still serving; default 5 s for `npm run api`, 0 for `npm start`. */
    drainDelayMs: number;
    /** SHUTDOWN_GRACE_PERIOD: requests in flight after the listeners closed; then 503 and connections closed. */
    gracePeriodMs: number;
    /** WORKER_SHUTDOWN_GRACE_TIME: running activities after the worker stopped polling; then cancelled, retried. */
    workerGraceMs: number;
  };
  /**
   * Settings of the workflows this process starts (BANK_STATUS_ORDER, BANK_TERMINAL_STATUSES, POLL_*,
   * APPLICATION_DEADLINE, REFRESH_*, TRANSACTION_EVENTS_WINDOW); merchants override some per request.
   */
  settings: ServiceSettings;
  webhooks: WebhookSettings;
  transactionsCallbackUrl?: string;
  /** Payload encryption (src/security/payload-codec.ts, src/temporal/data-converter.ts). */
  payloadEncryption: {
    /** The first encrypts, every one decrypts. */
    keys: PayloadEncryptionKey[];
    /** True when PAYLOAD_ENCRYPTION_KEYS is unset and the embedded default's public development key is used. */
    developmentKey: boolean;
  };
  /** The codec endpoint (src/api/routes/codec.ts). */
  codec: {
    /** Origins of the Temporal Web UI allowed by CORS (CODEC_CORS_ORIGINS). */
    corsOrigins: string[];
  };
  /** Merchant callbacks (src/security/callback-url.ts, src/security/callback-signature.ts). */
  callbacks: {
    /** CALLBACK_ALLOWED_ORIGINS; unset: loopback origins on the embedded stack, nothing with a real bank. */
    allowList: CallbackAllowList;
    /** CALLBACK_SIGNING_SECRETS, every one signs; never logged. Empty only when no callback can be sent. */
    signingSecrets: string[];
    /** True when the embedded stack signs with DEVELOPMENT_SIGNING_SECRET (CALLBACK_SIGNING_SECRETS unset). */
    developmentSecret: boolean;
  };
  /** The raw environment, for @temporalio/envconfig (TEMPORAL_PROFILE, TEMPORAL_API_KEY, TEMPORAL_TLS_*). */
  env: Record<string, string | undefined>;
}

/** What the receiver checks webhooks with. */
export interface WebhookSettings {
  publicBaseUrl: string;
  /** Keys the hash of new applications' webhookUrl, and verifies it. */
  hashSecret: string;
  /** WEBHOOK_HASH_SECRET_PREVIOUS: still verifies hashes after a rotation; undefined when none. */
  previousHashSecret?: string;
  /** Expected Authorization of account webhooks; empty: none expected (embedded, or waived with a real bank). */
  securityHeader: string;
}

/** What the webhook receivers check (the API needs no PUBLIC_BASE_URL: only the workers build webhook URLs). */
export type WebhookSecrets = Pick<WebhookSettings, 'hashSecret' | 'previousHashSecret' | 'securityHeader'>;

/** The development key's name when MERCHANT_API_KEYS is unset on the embedded stack. */
export const DEV_API_KEY_NAME = 'dev';
/** The development operator key's name when OPERATOR_API_KEYS is unset on the embedded stack. */
export const DEV_OPERATOR_KEY_NAME = 'operator';

export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(
      `Invalid configuration:\n${issues.map((i) => `  - ${i.variable}: ${i.message}`).join('\n')}\n` +
        'See .env.example and the README\'s "Configuration" table.',
    );
    this.name = 'ConfigError';
  }
}

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  options: { role?: ConfigRole } = {},
): Config {
  const parsed = envSchema(options.role ?? 'all').safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? '(environment)'),
        message: issue.message,
      })),
    );
  }
  const e = parsed.data;
  const temporal = resolveTemporalProfile(env);
  if (!temporal.profile) throw new ConfigError(temporal.issues);
  const embeddedBank = !e.BANK_BASE_URL;
  // Unset keys only on the embedded stack (the schema requires them with a real bank): one made for this run.
  const merchantApiKeys =
    e.MERCHANT_API_KEYS === undefined
      ? { keys: [{ name: DEV_API_KEY_NAME, key: generateApiKey() }], generated: true }
      : { keys: parseMerchantApiKeys(e.MERCHANT_API_KEYS).keys, generated: false };
  const callbacks = {
    allowList: callbackAllowList(e.CALLBACK_ALLOWED_ORIGINS, embeddedBank),
    signingSecrets: e.CALLBACK_SIGNING_SECRETS ?? (embeddedBank ? [DEVELOPMENT_SIGNING_SECRET] : []),
    developmentSecret: !e.CALLBACK_SIGNING_SECRETS && embeddedBank,
  };
  const merchants = loadMerchants(e, merchantApiKeys.keys, callbacks);
  const operatorApiKeys =
    e.OPERATOR_API_KEYS === undefined
      ? { keys: [{ name: DEV_OPERATOR_KEY_NAME, key: generateApiKey() }], generated: true }
      : { keys: parseOperatorApiKeys(e.OPERATOR_API_KEYS).keys, generated: false };
  return {
    nodeEnv: e.NODE_ENV ?? 'development',
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    tracing: tracingFromEnv(e),
    port: e.PORT,
    internalPort: e.INTERNAL_PORT,
    workerMetricsPort: e.WORKER_METRICS_PORT,
    merchantApiKeys,
    merchants,
    operatorApiKeys,
    temporal: {
      address: temporal.profile.address,
      namespace: temporal.profile.namespace,
      connection: {
        addressFrom: temporal.profile.addressFrom,
        apiKey: temporal.profile.apiKey,
        tls: temporal.profile.tls,
      },
      taskQueue: e.TASK_QUEUE,
      deployment: { name: e.WORKER_DEPLOYMENT_NAME, buildId: e.WORKER_BUILD_ID },
      devServer: { port: e.TEMPORAL_DEV_SERVER_PORT, uiPort: e.TEMPORAL_UI_PORT, dataDir: e.TEMPORAL_DATA_DIR },
    },
    bank: {
      embedded: embeddedBank,
      authUrl: e.BANK_AUTH_URL,
      baseUrl: e.BANK_BASE_URL,
      clientId: e.BANK_CLIENT_ID ?? DEV_DEFAULTS.BANK_CLIENT_ID,
      clientSecret: e.BANK_CLIENT_SECRET ?? DEV_DEFAULTS.BANK_CLIENT_SECRET,
      sandboxPort: e.SANDBOX_PORT,
      maxReadsPerSecond: e.BANK_MAX_READS_PER_SECOND,
    },
    worker: {
      maxCachedWorkflows: e.WORKER_MAX_CACHED_WORKFLOWS,
      maxConcurrentWorkflowTaskExecutions: e.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      maxConcurrentActivityTaskExecutions: e.WORKER_MAX_CONCURRENT_ACTIVITIES,
      maxWorkflowTaskPollers:
        e.WORKER_MAX_WORKFLOW_POLLERS ?? Math.min(DEFAULT_MAX_POLLERS, e.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS),
      maxActivityTaskPollers:
        e.WORKER_MAX_ACTIVITY_POLLERS ?? Math.min(DEFAULT_MAX_POLLERS, e.WORKER_MAX_CONCURRENT_ACTIVITIES),
    },
    shutdown: {
      drainDelayMs: e.SHUTDOWN_DRAIN_DELAY ?? (options.role === 'api' ? DEFAULT_API_DRAIN_DELAY_MS : 0),
      gracePeriodMs: e.SHUTDOWN_GRACE_PERIOD ?? DEFAULT_SHUTDOWN_GRACE_PERIOD_MS,
      workerGraceMs: e.WORKER_SHUTDOWN_GRACE_TIME ?? DEFAULT_WORKER_SHUTDOWN_GRACE_MS,
    },
    settings: serviceSettings(e),
    webhooks: {
      publicBaseUrl: e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`,
      hashSecret: e.WEBHOOK_HASH_SECRET ?? DEV_DEFAULTS.WEBHOOK_HASH_SECRET,
      previousHashSecret: e.WEBHOOK_HASH_SECRET_PREVIOUS,
      securityHeader: e.WEBHOOK_SECURITY_HEADER,
    },
    transactionsCallbackUrl: e.TRANSACTIONS_CALLBACK_URL,
    payloadEncryption: {
      keys: e.PAYLOAD_ENCRYPTION_KEYS ?? parsePayloadEncryptionKeys(DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS),
      developmentKey: !e.PAYLOAD_ENCRYPTION_KEYS,
    },
    codec: {
      // The embedded dev server's Web UI, under either name a browser may use for it.
      corsOrigins: e.CODEC_CORS_ORIGINS ?? [
        `http://localhost:${e.TEMPORAL_UI_PORT}`,
        `http://127.0.0.1:${e.TEMPORAL_UI_PORT}`,
      ],
    },
    callbacks,
    env,
  };
}

/** The merchant directory, or a ConfigError naming MERCHANTS_FILE (with the merchant and field) or LEGACY_MERCHANT. */
function loadMerchants(
  e: Env,
  keys: MerchantApiKey[],
  callbacks: { allowList: CallbackAllowList; signingSecrets: string[] },
): MerchantDirectory {
  let fileJson: unknown;
  if (e.MERCHANTS_FILE !== undefined) {
    const read = readMerchantsFile(e.MERCHANTS_FILE);
    if (read.problem) throw new ConfigError([read.problem]);
    fileJson = read.json;
  }
  const { directory, problems } = buildMerchantDirectory({
    keys,
    keysConfigured: e.MERCHANT_API_KEYS !== undefined,
    fileJson,
    legacyMerchant: e.LEGACY_MERCHANT,
    defaults: {
      allowList: callbacks.allowList,
      signingSecrets: callbacks.signingSecrets,
      transactionsCallbackUrl: e.TRANSACTIONS_CALLBACK_URL,
      limits: {
        requestsPerMinute: e.MERCHANT_REQUESTS_PER_MINUTE,
        maxLongPolls: e.MERCHANT_MAX_LONG_POLLS,
        minPollIntervalMs: e.MERCHANT_MIN_POLL_INTERVAL ?? DEFAULT_MERCHANT_LIMITS.minPollIntervalMs,
      },
    },
  });
  if (!directory) throw new ConfigError(problems);
  return directory;
}
