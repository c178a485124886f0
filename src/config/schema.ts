import { z } from 'zod';
import { parseMerchantApiKeys, parseOperatorApiKeys, sharedApiKeys } from '../security/api-keys';
import { WEBHOOK_SECURITY_HEADER_PATTERN } from '../shared/bank-wire';
import { CALLBACK_ALLOWED_ORIGINS, checkCallbackUrl } from '../security/callback-url';
import { CALLBACK_SIGNING_SECRETS } from '../security/callback-signature';
import { CALLBACK_SIGNING_MASTER_SECRETS } from '../security/merchant-signing-secret';
import {
  DEFAULT_SERVICE_SETTINGS,
  DEFAULT_STATUS_ORDER,
  DEFAULT_TERMINAL_STATUSES,
  formatDuration,
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
import {
  allowedOrigins,
  auditLog,
  byteSize,
  count,
  duration,
  emptyToUndefined,
  fraction,
  listenHost,
  merchantKeyStore,
  optionalCount,
  optionalList,
  optionalString,
  optionalUrl,
  origins,
  payloadKeys,
  port,
  signingMasters,
  signingSecrets,
} from './env-types';
import { ALL, documented, START_API, START_WORKER, type VariableDoc } from './variable-docs';

export { SECTIONS, VARIABLE_DOCS, type ConfigProcess, type Section, type VariableDoc } from './variable-docs';

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

/** MERCHANT_KEY_ENCRYPTION: `on` writes under merchant keys; `decrypt-only` reads them (a rollout's first step). */
export const MERCHANT_KEY_ENCRYPTION_SETTINGS = ['on', 'decrypt-only'] as const;
/** How long a process believes a merchant's keys (or their erasure) before reading the store again. */
export const DEFAULT_MERCHANT_KEY_CACHE_TTL_MS = 60_000;
const MERCHANT_KEY_CACHE_BOUNDS: Bounds = { min: 0, max: 600_000 };

/** Where `npm start` binds every listener but the public one (the embedded stack: this machine only). */
export const LOOPBACK_HOST = '127.0.0.1';
/** Where a process of its own (`npm run api`, `npm run worker`) binds them: behind its own network boundary. */
export const ALL_INTERFACES_HOST = '0.0.0.0';

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

const otlpProtocol = z.enum(['http/protobuf', 'http/json'], {
  error: 'must be http/protobuf or http/json (grpc is not supported by this service)',
});

export const OBSERVABILITY_ENV = {
  OTEL_EXPORTER_OTLP_ENDPOINT: documented(optionalUrl, {
    section: 'tracing',
    processes: ALL,
    description: 'base URL of an OTLP collector; spans go to `<endpoint>/v1/traces` (tracing is off when unset)',
    example: 'http://otel-collector:4318',
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: documented(optionalUrl, {
    section: 'tracing',
    processes: ALL,
    description: 'full URL for traces (wins over the above)',
    example: 'http://otel-collector:4318/v1/traces',
  }),
  OTEL_EXPORTER_OTLP_PROTOCOL: documented(z.preprocess(emptyToUndefined, otlpProtocol.default('http/protobuf')), {
    section: 'tracing',
    processes: ALL,
    description: '`http/protobuf` or `http/json`; `grpc` is refused',
  }),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: documented(z.preprocess(emptyToUndefined, otlpProtocol.optional()), {
    section: 'tracing',
    processes: ALL,
    description: 'the same, for traces only (wins over the above)',
    example: 'http/json',
  }),
  OTEL_SERVICE_NAME: documented(
    z.preprocess(
      emptyToUndefined,
      z
        .string()
        .max(255, 'must be at most 255 characters')
        .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
        .optional(),
    ),
    {
      section: 'tracing',
      processes: ALL,
      description: 'service name of the spans',
      default: '`paylater`, `paylater-api` or `paylater-worker` by entry point',
      example: 'paylater',
    },
  ),
  OTEL_SDK_DISABLED: documented(z.preprocess(emptyToUndefined, z.enum(['true', 'false']).default('false')), {
    section: 'tracing',
    processes: ALL,
    description: '`true`: tracing off even with an endpoint',
  }),
  LOG_FORMAT: documented(
    z.preprocess(emptyToUndefined, z.enum(['json', 'pretty'], { error: 'must be json or pretty' }).optional()),
    {
      section: 'process',
      processes: ALL,
      description: '`json` or `pretty`',
      default: 'pretty on a terminal, JSON otherwise',
      example: 'json',
    },
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

const WITH_REAL_BANK = 'required with a real bank';
const code = (v: string | number): string => `\`${v}\``;
const ms = (v: number): string => code(formatDuration(v));
const APP = DEFAULT_SERVICE_SETTINGS.applications;
const LIMITS = DEFAULT_MERCHANT_LIMITS;

/** A count of every merchant's budget (MERCHANTS_FILE overrides it per merchant). */
const budget = (fallback: number, description: string) =>
  documented(count(1, fallback), { section: 'merchants', processes: START_API, description });

/** A duration of a new workflow's lifecycle (src/shared/application-settings.ts), with its default. */
const lifecycle = (bounds: Bounds, fallbackMs: number, description: string) =>
  documented(duration(bounds), {
    section: 'lifecycle',
    processes: START_API,
    description,
    default: ms(fallbackMs),
    example: formatDuration(fallbackMs),
  });
const hashSecret = z.preprocess(
  emptyToUndefined,
  z.string().min(32, 'must be at least 32 characters (it keys an HMAC)').optional(),
);

/**
 * Every variable the service reads (the sandbox has its own: src/sandbox/config.ts): its type, default and
 * documentation, from which `npm run docs:config` writes docs/configuration.md and .env.example.
 */
export const ENV_SHAPE = {
  NODE_ENV: documented(optionalString, {
    section: 'process',
    processes: ALL,
    description: 'Node environment name',
    default: '`development`',
    example: 'production',
  }),
  ...OBSERVABILITY_ENV,
  LOG_LEVEL: documented(
    z.preprocess(
      emptyToUndefined,
      z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    ),
    { section: 'process', processes: ALL, description: 'pino level', set: true },
  ),
  PORT: documented(port(3000), {
    section: 'listeners',
    processes: START_API,
    description: "the public listener: the bank's webhooks, `/healthz`",
    set: true,
  }),
  INTERNAL_PORT: documented(port(3001), {
    section: 'listeners',
    processes: START_API,
    description:
      'the internal listener: merchant facade (API key), `/readyz`, and with the operator key `/metrics` and `/codec`; ' +
      'must differ from `PORT`',
    set: true,
  }),
  WORKER_METRICS_PORT: documented(port(9464), {
    section: 'listeners',
    processes: START_WORKER,
    description:
      "the worker's Prometheus `/metrics` (SDK and business series), `/healthz` and `/readyz`; `0`: a free port",
    set: true,
  }),
  INTERNAL_HOST: documented(listenHost, {
    section: 'listeners',
    processes: START_API,
    description: "the internal listener's address (an IP); merchants and operators reach it, never the internet",
    default: '`127.0.0.1` (`npm start`), `0.0.0.0` (`npm run api`)',
    example: LOOPBACK_HOST,
  }),
  WORKER_METRICS_HOST: documented(listenHost, {
    section: 'listeners',
    processes: START_WORKER,
    description: "the worker's listener's address (an IP); not merchant-facing: the monitoring network only",
    default: '`127.0.0.1` (`npm start`), `0.0.0.0` (`npm run worker`)',
    example: LOOPBACK_HOST,
  }),
  MERCHANT_API_KEYS: documented(optionalString, {
    section: 'merchants',
    processes: ALL,
    description:
      "`name:key,name:key`: each merchant's key of the facade; the names are the merchant ids (unique, " +
      '`[A-Za-z0-9._-]`), each key 24+ visible ASCII characters (no comma or quote). Revoke a key by removing its ' +
      'entry; make one with `openssl rand -base64 32`',
    default: `embedded: a key generated and printed at start-up; ${WITH_REAL_BANK} (API processes)`,
    example: 'shop-eu:replace-with-a-long-random-key,shop-us:another-long-random-key-here',
  }),
  MERCHANTS_FILE: documented(optionalString, {
    section: 'merchants',
    processes: ALL,
    description:
      'per-merchant settings (JSON: callback secrets, allow-list, payload version, budgets) over the globals ' +
      'below; format: docs/merchant-api.md#merchants',
    example: '/etc/paylater/merchants.json',
  }),
  MERCHANT_REQUESTS_PER_MINUTE: budget(LIMITS.requestsPerMinute, "every merchant's facade requests per minute"),
  MERCHANT_MAX_LONG_POLLS: budget(LIMITS.maxLongPolls, "every merchant's long polls open at once"),
  MERCHANT_MIN_POLL_INTERVAL: documented(duration(SETTING_BOUNDS.fastPollIntervalMs), {
    section: 'merchants',
    processes: START_API,
    description: 'the shortest poll interval a merchant may ask for (a duration)',
    default: ms(LIMITS.minPollIntervalMs),
    example: formatDuration(LIMITS.minPollIntervalMs),
  }),
  MERCHANT_CREATIONS_PER_MINUTE: budget(
    LIMITS.creationsPerMinute,
    "every merchant's applications created (`POST /applications`) per minute",
  ),
  MERCHANT_REFRESHES_PER_MINUTE: budget(
    LIMITS.refreshesPerMinute,
    "every merchant's consent refreshes started (`POST /consents/{id}/refresh`) per minute",
  ),
  MERCHANT_MAX_CONSENTS: budget(
    LIMITS.maxConsents,
    "every merchant's consents claimed at once (counted in Temporal, across API processes)",
  ),
  MERCHANT_MAX_OPEN_APPLICATIONS: budget(
    LIMITS.maxOpenApplications,
    "every merchant's applications open at once (counted in Temporal, across API processes)",
  ),
  MERCHANT_MAX_LIVE_PAGES: budget(
    LIMITS.maxLivePages,
    "every merchant's console live pages waiting for a change at once",
  ),
  MERCHANT_CALLBACK_RESENDS_PER_MINUTE: budget(
    LIMITS.callbackResendsPerMinute,
    "every merchant's pace of a bulk callback resend (callbacks sent again per minute, one bulk resend at a time)",
  ),
  OPERATOR_API_KEYS: documented(optionalString, {
    section: 'merchants',
    processes: START_API,
    description:
      "`name:key,…` for `/codec` (decoding every merchant's payloads in the Web UI and the CLI) and every operator " +
      "route; a merchant key there answers 403, and no key may be both a merchant's and an operator's",
    default: `embedded: a key generated and printed at start-up; ${WITH_REAL_BANK}`,
    example: 'ops-alice:replace-with-another-long-random-key',
  }),
  CONSENT_ASSIGNMENT: documented(
    z.preprocess(
      emptyToUndefined,
      z
        .enum(CONSENT_ASSIGNMENT_SETTINGS, { error: `must be one of ${CONSENT_ASSIGNMENT_SETTINGS.join(', ')}` })
        .default('auto'),
    ),
    {
      section: 'merchants',
      processes: START_API,
      // Details: docs/decisions/0046-consents-assigned-by-an-operator.md.
      description:
        'who gives a consent its owner (the bank does not say): `operator` assigns it (`PUT /operator/consents/{id}`), ' +
        '`merchant` claims a free one; `auto`: `merchant` with one merchant, `operator` otherwise',
    },
  ),
  FAILED_AUTHENTICATIONS_PER_15_MINUTES: documented(optionalCount(1), {
    section: 'merchants',
    processes: START_API,
    description:
      'wrong keys per client address in 15 minutes, per API process (API, `/codec`, `/console` sign-in together); ' +
      "then 429 until the window ends, a right key included. The address is the connection's: behind a proxy " +
      'everything through it shares one count (docs/console.md#sign-in-limit)',
    default: `${code(DEFAULT_FAILED_AUTHENTICATIONS)} (or \`CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES\`)`,
    example: String(DEFAULT_FAILED_AUTHENTICATIONS),
  }),
  CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES: documented(optionalCount(1), {
    section: 'merchants',
    processes: START_API,
    description: 'deprecated: the former name of `FAILED_AUTHENTICATIONS_PER_15_MINUTES`, read when that is unset',
    example: String(DEFAULT_FAILED_AUTHENTICATIONS),
  }),
  CONSOLE_SESSIONS_PER_MERCHANT: documented(count(1, DEFAULT_CONSOLE_SESSIONS_PER_MERCHANT), {
    section: 'merchants',
    processes: START_API,
    description:
      "`/console` sessions per merchant, per API process; a new one past them ends the merchant's own least " +
      "recently used, never another merchant's",
  }),

  // Address, namespace, API key and TLS are decided by @temporalio/envconfig from these and from a profile
  // (src/temporal/profile.ts).
  TEMPORAL_ADDRESS: documented(
    z.preprocess(
      emptyToUndefined,
      z.string().regex(TEMPORAL_ADDRESS_PATTERN, 'must be host:port, for example localhost:7233').optional(),
    ),
    {
      section: 'temporal',
      processes: ALL,
      description: '`host:port` of a Temporal cluster; `npm run worker` and `npm run api` require one',
      default: "the profile's; neither: the embedded dev server",
      example: 'my-namespace.a1b2c.tmprl.cloud:7233',
    },
  ),
  TEMPORAL_NAMESPACE: documented(optionalString, {
    section: 'temporal',
    processes: ALL,
    description: 'namespace',
    default: "the profile's, else `default`",
    example: 'my-namespace.a1b2c',
  }),
  TEMPORAL_PROFILE: documented(optionalString, {
    section: 'temporal',
    processes: ALL,
    description: 'the Temporal CLI profile giving address, namespace, API key, TLS (the variables win over it)',
    default: '`default`',
    example: 'prod',
  }),
  TEMPORAL_CONFIG_FILE: documented(optionalString, {
    section: 'temporal',
    processes: ALL,
    description: "the profiles' TOML file",
    default: '`~/.config/temporalio/temporal.toml`',
    example: '/etc/paylater/temporal.toml',
  }),
  TASK_QUEUE: documented(z.preprocess(emptyToUndefined, z.string().min(1).default('paylater')), {
    section: 'temporal',
    processes: ALL,
    description: "the workers' task queue (bank reads: `<TASK_QUEUE>-bank-reads`)",
    set: true,
  }),
  // Worker Versioning (src/temporal/worker-deployment.ts). Letters, digits, '-' and '_': the CLI writes a version as
  // `{deployment}.{build}`.
  WORKER_DEPLOYMENT_NAME: documented(
    z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(DEPLOYMENT_NAME_PATTERN, 'must be 1 to 100 letters, digits, "-" or "_"')
        .default(DEFAULT_WORKER_DEPLOYMENT_NAME),
    ),
    { section: 'temporal', processes: START_WORKER, description: 'the Worker Deployment every worker joins' },
  ),
  WORKER_BUILD_ID: documented(
    z.preprocess(
      emptyToUndefined,
      z.string().regex(DEPLOYMENT_NAME_PATTERN, 'must be 1 to 100 letters, digits, "-" or "_"').optional(),
    ),
    {
      section: 'temporal',
      processes: START_WORKER,
      description: "the worker's build id",
      default: "the workflow bundle's (`wf-…`)",
    },
  ),
  TEMPORAL_UI_PORT: documented(port(8233), {
    section: 'temporal',
    processes: START_API,
    description: "the embedded dev server's Web UI (and the codec's CORS)",
    set: true,
  }),
  TEMPORAL_UI_CODEC_PORT: documented(port(8234), {
    section: 'temporal',
    processes: ['start'],
    description:
      "the embedded Web UI's codec gateway on 127.0.0.1: the UI decodes through it as the operator `web-ui`, with " +
      'the public development payload key only (src/api/ui-codec-gateway.ts)',
    set: true,
  }),
  TEMPORAL_DEV_SERVER_PORT: documented(port(7233), {
    section: 'temporal',
    processes: ['start'],
    description: 'the embedded dev server (only when no address is configured)',
    set: true,
  }),
  TEMPORAL_DATA_DIR: documented(z.preprocess(emptyToUndefined, z.string().default('data')), {
    section: 'temporal',
    processes: ['start'],
    description: "the embedded dev server's and sandbox's data",
    set: true,
  }),

  BANK_AUTH_URL: documented(optionalUrl, {
    section: 'bank',
    processes: START_WORKER,
    description: '`{auth_url}` of docs/bank-interface.md',
    example: 'https://auth.bank.example',
  }),
  BANK_BASE_URL: documented(optionalUrl, {
    section: 'bank',
    processes: ALL,
    description: '`{base_url}` of docs/bank-interface.md: set, a real bank (secrets required)',
    default: 'unset: the embedded bank sandbox',
    example: 'https://api.bank.example',
  }),
  BANK_CLIENT_ID: documented(optionalString, {
    section: 'bank',
    processes: START_WORKER,
    description: 'OAuth2 client id',
    default: `the sandbox's when embedded; ${WITH_REAL_BANK}`,
  }),
  BANK_CLIENT_SECRET: documented(optionalString, {
    section: 'bank',
    processes: START_WORKER,
    description: 'OAuth2 client secret',
    default: `the sandbox's when embedded; ${WITH_REAL_BANK}`,
  }),
  SANDBOX_PORT: documented(port(4010), {
    section: 'bank',
    processes: ['start'],
    description: 'the embedded bank sandbox (only when BANK_BASE_URL is unset)',
    set: true,
  }),
  BANK_MAX_READS_PER_SECOND: documented(
    z.preprocess(
      emptyToUndefined,
      z.coerce
        .number({ error: 'must be a number of reads per second' })
        .positive('must be greater than 0')
        .max(100_000, 'must be at most 100000')
        .default(DEFAULT_BANK_MAX_READS_PER_SECOND),
    ),
    {
      section: 'bank',
      processes: START_WORKER,
      description:
        "ceiling on bank status reads per second across ALL workers (the bank-reads task queue's rate limit)",
      set: true,
    },
  ),

  BANK_STATUS_ORDER: documented(optionalList, {
    section: 'lifecycle',
    processes: START_API,
    description:
      "the bank's application statuses in order, terminal ones last (they share the last rank); the embedded " +
      'sandbox speaks the configured vocabulary',
    default: code(DEFAULT_STATUS_ORDER.join(',')),
    example: DEFAULT_STATUS_ORDER.join(','),
  }),
  BANK_TERMINAL_STATUSES: documented(optionalList, {
    section: 'lifecycle',
    processes: START_API,
    description: 'the statuses that end an application (the last entries of the order)',
    default: code(DEFAULT_TERMINAL_STATUSES.join(',')),
    example: DEFAULT_TERMINAL_STATUSES.join(','),
  }),
  POLL_FAST_INTERVAL: lifecycle(
    SETTING_BOUNDS.fastPollIntervalMs,
    APP.fastPollIntervalMs,
    'poll interval of a new application (1s–1h)',
  ),
  POLL_RESPONSIVE_WINDOW: lifecycle(
    SETTING_BOUNDS.responsiveWindowMs,
    APP.responsiveWindowMs,
    'how long polls stay fast after a change (0–1d)',
  ),
  POLL_BACKOFF_FACTOR: documented(
    z.preprocess(
      emptyToUndefined,
      z.coerce
        .number({ error: 'must be a number' })
        .min(SETTING_BOUNDS.pollBackoffFactor.min, `must be at least ${SETTING_BOUNDS.pollBackoffFactor.min}`)
        .max(SETTING_BOUNDS.pollBackoffFactor.max, `must be at most ${SETTING_BOUNDS.pollBackoffFactor.max}`)
        .optional(),
    ),
    {
      section: 'lifecycle',
      processes: START_API,
      description: 'growth of the interval after it (1–10)',
      default: code(APP.pollBackoffFactor),
      example: String(APP.pollBackoffFactor),
    },
  ),
  POLL_SLOW_INTERVAL: lifecycle(
    SETTING_BOUNDS.slowPollIntervalMs,
    APP.slowPollIntervalMs,
    'the longest interval (1s–1d, not below POLL_FAST_INTERVAL)',
  ),
  POLL_NO_WEBHOOK_INTERVAL: lifecycle(
    SETTING_BOUNDS.noWebhookPollIntervalMs,
    APP.noWebhookPollIntervalMs,
    'the interval while no webhook reaches the service (1s–1d, between POLL_FAST_INTERVAL and POLL_SLOW_INTERVAL)',
  ),
  APPLICATION_DEADLINE: lifecycle(
    SETTING_BOUNDS.deadlineMs,
    APP.deadlineMs,
    'stop following an application this long after it started (1m–365d)',
  ),
  REFRESH_TIMEOUT: lifecycle(
    SETTING_BOUNDS.refreshTimeoutMs,
    DEFAULT_SERVICE_SETTINGS.refresh.timeoutMs,
    'a consent refresh gives up after this (1s–1d)',
  ),
  REFRESH_QUIET_PERIOD: lifecycle(
    SETTING_BOUNDS.refreshQuietPeriodMs,
    DEFAULT_SERVICE_SETTINGS.refresh.quietPeriodMs,
    'a consent refresh ends after this long without a report (100ms–1d)',
  ),
  TRANSACTION_EVENTS_WINDOW: lifecycle(
    SETTING_BOUNDS.transactionEventsWindowMs,
    DEFAULT_SERVICE_SETTINGS.transactionEvents.coalesceWindowMs,
    'how long transactionEvents coalesces a burst before its one callback (100ms–1h)',
  ),

  SHUTDOWN_DRAIN_DELAY: documented(duration(SHUTDOWN_BOUNDS), {
    section: 'shutdown',
    processes: START_API,
    description: 'API: on SIGTERM, `/readyz` 503 while still serving, for this long, so a load balancer takes it out',
    default: `${ms(DEFAULT_API_DRAIN_DELAY_MS)} (\`npm run api\`), \`0\` (\`npm start\`)`,
    example: formatDuration(DEFAULT_API_DRAIN_DELAY_MS),
  }),
  SHUTDOWN_GRACE_PERIOD: documented(duration(SHUTDOWN_BOUNDS), {
    section: 'shutdown',
    processes: START_API,
    description: 'API: then requests in flight get this long; what still waits gets a 503, connections are closed',
    default: ms(DEFAULT_SHUTDOWN_GRACE_PERIOD_MS),
    example: formatDuration(DEFAULT_SHUTDOWN_GRACE_PERIOD_MS),
  }),
  WORKER_SHUTDOWN_GRACE_TIME: documented(duration(SHUTDOWN_BOUNDS), {
    section: 'shutdown',
    processes: START_WORKER,
    description: 'worker: on SIGTERM, running activities get this long, then are cancelled and retried elsewhere',
    default: ms(DEFAULT_WORKER_SHUTDOWN_GRACE_MS),
    example: formatDuration(DEFAULT_WORKER_SHUTDOWN_GRACE_MS),
  }),

  // Unset, the cache follows the memory limit (src/worker/sizing.ts).
  WORKER_MAX_CACHED_WORKFLOWS: documented(optionalCount(0), {
    section: 'workerSizing',
    processes: START_WORKER,
    description:
      'workflows a worker keeps in memory; `0` disables the cache (debugging only); unset: from the memory limit, ' +
      '0.6 MiB each (docs/operations.md#sizing-and-scaling-a-worker)',
    default: 'from the memory limit; 500 with none',
    example: '500',
  }),
  WORKER_MEMORY_LIMIT: documented(byteSize, {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'the memory a worker may use (`768Mi`, `2Gi`, bytes): sizes its workflow cache',
    default: 'the smallest of the cgroup limit and `--max-old-space-size`; none',
    example: '1Gi',
  }),
  WORKER_TUNER: documented(
    z.preprocess(
      emptyToUndefined,
      z.enum(WORKER_TUNERS, { error: `must be one of ${WORKER_TUNERS.join(', ')}` }).default('fixed'),
    ),
    {
      section: 'workerSizing',
      processes: START_WORKER,
      description:
        '`fixed`: the slot counts below; `resource-based`: the SDK hands out slots while memory and CPU stay under ' +
        'their targets, up to those counts',
      set: true,
    },
  ),
  WORKER_TARGET_MEMORY_USAGE: documented(fraction(DEFAULT_WORKER_TARGET_MEMORY_USAGE), {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'with `resource-based`: the share of memory (the cgroup limit or the machine) to stay under',
  }),
  WORKER_TARGET_CPU_USAGE: documented(fraction(DEFAULT_WORKER_TARGET_CPU_USAGE), {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'with `resource-based`: the share of CPU to stay under',
  }),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: documented(count(2, DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS), {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'workflow task slots of a worker',
    set: true,
  }),
  WORKER_MAX_CONCURRENT_ACTIVITIES: documented(count(1, DEFAULT_MAX_CONCURRENT_ACTIVITIES), {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'activity slots, per task queue',
    set: true,
  }),
  // Core refuses fewer than 2 workflow pollers with a cache.
  WORKER_MAX_WORKFLOW_POLLERS: documented(optionalCount(2), {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'workflow task long polls',
    default: 'min(10, the slots)',
    example: String(DEFAULT_MAX_POLLERS),
  }),
  WORKER_MAX_ACTIVITY_POLLERS: documented(optionalCount(1), {
    section: 'workerSizing',
    processes: START_WORKER,
    description: 'activity task long polls, per task queue',
    default: 'min(10, the slots)',
    example: String(DEFAULT_MAX_POLLERS),
  }),

  PUBLIC_BASE_URL: documented(optionalUrl, {
    section: 'webhooks',
    processes: START_WORKER,
    description: "where the bank reaches the receiver; prefix of each application's `webhookUrl`",
    default: `\`http://localhost:$PORT\`; ${WITH_REAL_BANK}`,
    example: 'https://paylater.merchant.example',
  }),
  WEBHOOK_HASH_SECRET: documented(hashSecret, {
    section: 'webhooks',
    processes: ALL,
    description: 'keys the HMAC in each `webhookUrl` (at least 32 characters)',
    default: `a development value; ${WITH_REAL_BANK}`,
  }),
  WEBHOOK_HASH_SECRET_PREVIOUS: documented(hashSecret, {
    section: 'webhooks',
    processes: START_API,
    description:
      'during a rotation, the previous secret: its hashes still verify, so applications created before keep their ' +
      'webhooks; remove it once they have ended (their deadline)',
  }),
  WEBHOOK_SECURITY_HEADER: documented(
    z
      .string()
      .regex(WEBHOOK_SECURITY_HEADER_PATTERN, 'must match [ a-zA-Z0-9=+/]* (the bank accepts nothing else)')
      .default(''),
    {
      section: 'webhooks',
      processes: START_API,
      description:
        "the bank's Webhook Security Header, sent back as `Authorization` on every account webhook; " +
        `\`[ a-zA-Z0-9=+/]*\`, at least ${MIN_SECURITY_HEADER_LENGTH} characters with a real bank`,
      default: `empty; ${WITH_REAL_BANK} (API processes) unless waived`,
      set: true,
    },
  ),
  WEBHOOK_SECURITY_HEADER_WAIVED: documented(
    z.preprocess(
      emptyToUndefined,
      z
        .enum(['true', 'false'], { error: 'must be true or false' })
        .default('false')
        .transform((v) => v === 'true'),
    ),
    {
      section: 'webhooks',
      processes: START_API,
      description: '`true`: accept account webhooks without a security header from a real bank',
    },
  ),
  TRANSACTIONS_CALLBACK_URL: documented(optionalUrl, {
    section: 'webhooks',
    processes: ALL,
    description:
      "one merchant's endpoint for changed accounts of transactionEvents and late bank reports (several: each " +
      "one's `transactionsCallbackUrl` in MERCHANTS_FILE; one URL for two merchants is refused)",
    example: 'https://merchant.example/hooks/transactions',
  }),

  CALLBACK_ALLOWED_ORIGINS: documented(allowedOrigins, {
    section: 'callbacks',
    processes: ALL,
    description:
      "origins (exact `scheme://host[:port]`, comma-separated) one merchant's callbacks and TRANSACTIONS_CALLBACK_URL " +
      "may go to (several merchants: each one's `callbackAllowedOrigins` in MERCHANTS_FILE)",
    default: 'loopback when embedded and one merchant; none with a real bank',
    example: 'https://shop.example,https://hooks.shop.example:8443',
  }),
  CALLBACK_SIGNING_SECRETS: documented(signingSecrets, {
    section: 'callbacks',
    processes: ALL,
    description:
      'instead of the master below, for one merchant only: its Standard Webhooks secrets (`whsec_<base64 of 24-64 ' +
      'bytes>`), comma-separated, each signs; refused beside the master or for two merchants',
    example: 'whsec_new...,whsec_old...',
  }),
  // Each merchant's own secret is derived from the first (docs/decisions/0045-callback-signing-secret-per-merchant.md).
  CALLBACK_SIGNING_MASTER_SECRETS: documented(signingMasters, {
    section: 'callbacks',
    processes: ALL,
    description:
      "masters (32+ characters, comma-separated; `openssl rand -base64 32`) each merchant's own callback secret " +
      'derives from: the first derives the secrets merchants are shown, every one signs (to replace it, put the new ' +
      'one first). Merchants rotate their own (docs/merchant-api.md#callback-signing-secret)',
    default: 'embedded: a public development master; required with a real bank for callbacks',
  }),
  // src/shared/undelivered-callbacks.ts.
  CALLBACK_RETRY_WINDOW: documented(duration(CALLBACK_RETRY_WINDOW_BOUNDS), {
    section: 'callbacks',
    processes: START_WORKER,
    description:
      "how long a merchant's callback is retried before it is given up and listed for a resend (a duration, at most " +
      "7d); a merchant's `callbackRetryWindow` in MERCHANTS_FILE wins",
    default: ms(DEFAULT_CALLBACK_RETRY_WINDOW_MS),
    example: formatDuration(DEFAULT_CALLBACK_RETRY_WINDOW_MS),
  }),
  // docs/decisions/0040-callback-payload-shape.md.
  CALLBACK_PAYLOAD_VERSION: documented(
    z.preprocess(
      emptyToUndefined,
      z
        .enum(CALLBACK_PAYLOAD_VERSIONS, { error: `must be one of ${CALLBACK_PAYLOAD_VERSIONS.join(', ')}` })
        .default(CURRENT_CALLBACK_PAYLOAD_VERSION),
    ),
    {
      section: 'callbacks',
      processes: START_WORKER,
      description:
        "callbacks' body: `2026-11-25` (Standard Webhooks) or `legacy` (deprecated); a merchant's " +
        '`callbackPayloadVersion` in MERCHANTS_FILE wins (docs/merchant-api.md#callbacks)',
    },
  ),

  PAYLOAD_ENCRYPTION_KEYS: documented(payloadKeys, {
    section: 'payloads',
    processes: ALL,
    description:
      '`keyId:<base64 of 32 bytes>,…`: the first encrypts Temporal payloads, every one decrypts (to rotate, put a new ' +
      'key first and keep the old ones while a history needs them); make a key with `openssl rand -base64 32`',
    default: `embedded: a public development key (warned); ${WITH_REAL_BANK}`,
    example: '2026-01:<base64>,2025-07:<base64>',
  }),
  CODEC_CORS_ORIGINS: documented(origins, {
    section: 'payloads',
    processes: START_API,
    description: 'browser origins of a Temporal Web UI allowed to call `/codec`',
    default: 'the embedded Web UI',
    example: 'https://temporal-ui.internal.example',
  }),

  AUDIT_LOG: documented(auditLog, {
    section: 'audit',
    processes: START_API,
    description:
      'the audit trail: `file:<path>` (one process) or `postgres://user:password@host:5432/db` (several API ' +
      'processes); also read by `npm run deploy` and `npm run audit:verify`',
    default: '`file:<TEMPORAL_DATA_DIR>/audit/audit.jsonl`',
    example: ['file:data/audit/audit.jsonl', 'postgres://paylater:<password>@db.internal:5432/paylater'],
  }),

  MERCHANT_KEY_STORE: documented(merchantKeyStore, {
    section: 'merchantKeys',
    processes: ALL,
    description:
      "the merchants' payload keys, wrapped by PAYLOAD_ENCRYPTION_KEYS: `file:<path>` (one machine) or " +
      '`postgres://user:password@host:5432/db` (several hosts); every process and `npm run erase-merchant` use the same',
    default: '`file:<TEMPORAL_DATA_DIR>/keys/merchant-keys.json`',
    example: 'postgres://paylater:<password>@db.internal:5432/paylater',
  }),
  MERCHANT_KEY_ENCRYPTION: documented(
    z.preprocess(
      emptyToUndefined,
      z
        .enum(MERCHANT_KEY_ENCRYPTION_SETTINGS, {
          error: `must be one of ${MERCHANT_KEY_ENCRYPTION_SETTINGS.join(', ')}`,
        })
        .optional(),
    ),
    {
      section: 'merchantKeys',
      processes: ALL,
      description:
        "`on`: a merchant's payloads are written under its own key; `decrypt-only`: read them, write under the master " +
        "(a rollout's first step, while older workers cannot read merchant keys)",
      default:
        '`on` with MERCHANT_KEY_STORE set; else `decrypt-only` (a per-container file is no shared store; the typed client reads with the master keys)',
      example: 'decrypt-only',
    },
  ),
  MERCHANT_KEY_CACHE_TTL: documented(duration(MERCHANT_KEY_CACHE_BOUNDS), {
    section: 'merchantKeys',
    processes: ALL,
    description: "how long a process keeps a merchant's unwrapped keys (or its erasure) before reading the store again",
    default: ms(DEFAULT_MERCHANT_KEY_CACHE_TTL_MS),
    example: formatDuration(DEFAULT_MERCHANT_KEY_CACHE_TTL_MS),
  }),
};

/**
 * Variables read outside this schema, by @temporalio/envconfig (src/temporal/profile.ts) and the Temporal binaries'
 * lookup (src/temporal/binaries.ts): documented beside the schema's so the generated files list them too.
 */
export const READ_ELSEWHERE: Record<string, VariableDoc> = {
  TEMPORAL_API_KEY: {
    section: 'temporal',
    processes: ALL,
    description: 'Temporal Cloud (or another server) with an API key; turns TLS on (read by @temporalio/envconfig)',
    example: '',
  },
  TEMPORAL_TLS: {
    section: 'temporal',
    processes: ALL,
    description: 'TLS to a self-hosted cluster, or mTLS',
    example: 'true',
  },
  TEMPORAL_TLS_CLIENT_CERT_PATH: {
    section: 'temporal',
    processes: ALL,
    description: "mTLS: the client's certificate",
    example: '/etc/temporal/client.pem',
  },
  TEMPORAL_TLS_CLIENT_KEY_PATH: {
    section: 'temporal',
    processes: ALL,
    description: "mTLS: the client's key",
    example: '/etc/temporal/client.key',
  },
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: { section: 'temporal', processes: ALL, description: "the server's CA certificate" },
  TEMPORAL_TLS_SERVER_NAME: { section: 'temporal', processes: ALL, description: "the server's name for TLS" },
  TEMPORAL_CLI_PATH: {
    section: 'temporal',
    processes: ['start'],
    description: 'a Temporal CLI binary for the embedded dev server, instead of the one the project installs',
    example: '/usr/local/bin/temporal',
  },
  TEMPORAL_TEST_SERVER_PATH: {
    section: 'temporal',
    processes: [],
    description: "the tests' time-skipping test server binary (docs/testing.md)",
    example: '/usr/local/bin/temporal-test-server',
  },
};

/** The variables as parsed, before the checks across them. */
type ParsedEnv = z.infer<z.ZodObject<typeof ENV_SHAPE>>;

/** The schema of one process's environment: `role` decides what a real bank requires (see ConfigRole). */
export const envSchema = (role: ConfigRole) =>
  z.object(ENV_SHAPE).superRefine((env, ctx) => {
    callbackIssues(env, ctx);
    for (const p of resolveServiceSettings(env).problems)
      ctx.addIssue({ code: 'custom', path: [p.variable], message: p.message });
    workerSizingIssues(env, ctx);
    listenerIssues(env, role, ctx);
    apiKeyIssues(env, ctx);
    webhookIssues(env, ctx);
    realBankIssues(env, role, ctx);
  });

function workerSizingIssues(env: ParsedEnv, ctx: z.RefinementCtx): void {
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
}

function listenerIssues(env: ParsedEnv, role: ConfigRole, ctx: z.RefinementCtx): void {
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
}

function apiKeyIssues(env: ParsedEnv, ctx: z.RefinementCtx): void {
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
}

function webhookIssues(env: ParsedEnv, ctx: z.RefinementCtx): void {
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
}

/** Talking to a real bank (BANK_BASE_URL set): no development defaults. */
function realBankIssues(env: ParsedEnv, role: ConfigRole, ctx: z.RefinementCtx): void {
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
}

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
