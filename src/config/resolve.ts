import {
  generateApiKey,
  parseMerchantApiKeys,
  parseOperatorApiKeys,
  type MerchantApiKey,
  type OperatorApiKey,
} from '../security/api-keys';
import {
  DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS,
  parsePayloadEncryptionKeys,
  type PayloadEncryptionKey,
} from '../security/payload-codec';
import { DEVELOPMENT_SIGNING_MASTER_SECRET } from '../security/merchant-signing-secret';
import type { CallbackAllowList } from '../security/callback-url';
import type { ServiceSettings } from '../shared/application-settings';
import {
  consentAssignmentFor,
  type ConsentAssignment,
  type ConsentAssignmentSetting,
} from '../shared/consent-assignment';
import { resolveTemporalProfile, type TemporalProfile } from '../temporal/profile';
import type { TracingConfig } from '../telemetry/tracing';
import {
  buildMerchantDirectory,
  DEFAULT_MERCHANT_LIMITS,
  readMerchantsFile,
  type MerchantDirectory,
} from './merchants';
import {
  ALL_INTERFACES_HOST,
  ConfigError,
  DEFAULT_API_DRAIN_DELAY_MS,
  DEFAULT_FAILED_AUTHENTICATIONS,
  DEFAULT_MAX_POLLERS,
  DEFAULT_MERCHANT_KEY_CACHE_TTL_MS,
  DEFAULT_SHUTDOWN_GRACE_PERIOD_MS,
  DEFAULT_WORKER_SHUTDOWN_GRACE_MS,
  DEV_DEFAULTS,
  envSchema,
  LOOPBACK_HOST,
  tracingFromEnv,
  type ConfigRole,
  type Env,
} from './schema';
import { callbackAllowList, resolveServiceSettings } from './settings';
import type { CallbackPayloadVersion } from '../activities/callback-payload';
import type { DevelopmentKeys } from './development-keys';
import { DEFAULT_CALLBACK_RETRY_WINDOW_MS } from '../shared/undelivered-callbacks';
import { defaultAuditLogSetting, type AuditLogSetting } from '../audit/setting';
import { defaultMerchantKeyStoreSetting, type MerchantKeyStoreSetting } from '../keys/setting';

/**
 * The environment resolved into what the processes run with, in one place: every default that depends on another
 * variable (embedded or real bank, the role, the Temporal profile) and every setting over its built-in default.
 * loadConfig(env) is called only by entry points (through src/config/main.ts, api.ts or worker.ts).
 */

/** Sizing of one worker process (Worker options; src/worker.ts applies them). */
export interface WorkerTuning {
  /** maxCachedWorkflows (main worker: the only one with workflows); undefined: from the memory limit (src/worker/sizing.ts). */
  maxCachedWorkflows: number | undefined;
  /** WORKER_MEMORY_LIMIT in bytes: sizes the cache when it is not set. */
  memoryLimitBytes: number | undefined;
  /** WORKER_TUNER: fixed slots, or resource-based slot suppliers up to the slot counts. */
  tuner: 'fixed' | 'resource-based';
  /** With the resource-based tuner: the memory and CPU shares to stay under. */
  targetMemoryUsage: number;
  targetCpuUsage: number;
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
  /** The internal listener's address (INTERNAL_HOST): loopback for `npm start`, every interface for `npm run api`. */
  internalHost: string;
  /** The worker listener's address (WORKER_METRICS_HOST): loopback for `npm start`, every interface for a worker. */
  workerMetricsHost: string;
  /** Keys of the merchant facade (MERCHANT_API_KEYS); `generated`: a development key made for this run. */
  merchantApiKeys: { keys: MerchantApiKey[]; generated: boolean };
  /** Each merchant's settings (MERCHANTS_FILE over the globals). */
  merchants: MerchantDirectory;
  /** Keys of the operator routes, /codec (OPERATOR_API_KEYS); `generated`: a development key made for this run. */
  operatorApiKeys: { keys: OperatorApiKey[]; generated: boolean };
  /** CONSENT_ASSIGNMENT as set, and the rule in force (`auto` resolved by the number of merchants). */
  consentAssignment: { setting: ConsentAssignmentSetting; rule: ConsentAssignment };
  /** The file the generated development keys are kept in (`npm start`: src/config/development-keys.ts); else unset. */
  developmentKeysFile?: string;
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
    /** The embedded dev server: its ports, its Web UI's codec gateway's (TEMPORAL_UI_CODEC_PORT), its data folder. */
    devServer: { port: number; uiPort: number; uiCodecPort: number; dataDir: string };
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
  /** Failed authentications on the API, /codec and the console's sign-in (src/api/auth-failures.ts). */
  failedAuthentications: {
    /** FAILED_AUTHENTICATIONS_PER_15_MINUTES (formerly CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES): per client address. */
    per15Minutes: number;
  };
  /** The merchant console (src/api/resources/console/routes.ts). */
  console: {
    /** CONSOLE_SESSIONS_PER_MERCHANT: sessions held per merchant. */
    sessionsPerMerchant: number;
  };
  /** The codec endpoint (src/api/resources/codec/routes.ts). */
  codec: {
    /** Origins of the Temporal Web UI allowed by CORS (CODEC_CORS_ORIGINS). */
    corsOrigins: string[];
  };
  /** Merchant callbacks (src/security/callback-url.ts, src/security/callback-signature.ts). */
  callbacks: {
    /** CALLBACK_ALLOWED_ORIGINS; unset: loopback origins on the embedded stack, nothing with a real bank. */
    allowList: CallbackAllowList;
    /** True when allowList is the built-in default (CALLBACK_ALLOWED_ORIGINS unset): it serves one merchant only. */
    builtInAllowList: boolean;
    /** CALLBACK_SIGNING_SECRETS, every one signs, for one merchant at most; never logged. Empty when unset. */
    signingSecrets: string[];
    /**
     * CALLBACK_SIGNING_MASTER_SECRETS (the embedded stack's DEVELOPMENT_SIGNING_MASTER_SECRET when neither variable is
     * set): each merchant's own secrets are derived from them; never logged. Empty when CALLBACK_SIGNING_SECRETS is set.
     */
    signingMasters: string[];
    /** True when the embedded stack derives with DEVELOPMENT_SIGNING_MASTER_SECRET (neither variable set). */
    developmentSecret: boolean;
    /** CALLBACK_PAYLOAD_VERSION: the body's shape for merchants whose entry does not choose. */
    payloadVersion: CallbackPayloadVersion;
    /** CALLBACK_RETRY_WINDOW: how long a callback is retried, for merchants whose entry does not say (ms). */
    retryWindowMs: number;
  };
  /** Where the audit trail is kept (AUDIT_LOG; unset: a file in TEMPORAL_DATA_DIR): docs/security.md#audit-trail. */
  audit: AuditLogSetting;
  /** A payload key per merchant (docs/security.md#a-payload-key-per-merchant, src/security/merchant-keys.ts). */
  merchantKeys: {
    /** MERCHANT_KEY_STORE; unset: a file in TEMPORAL_DATA_DIR. */
    store: MerchantKeyStoreSetting;
    /** MERCHANT_KEY_ENCRYPTION=on: merchants' payloads are written under their keys (decrypt-only: read only). */
    encrypt: boolean;
    /** MERCHANT_KEY_CACHE_TTL in milliseconds. */
    cacheTtlMs: number;
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

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  options: {
    role?: ConfigRole;
    /**
     * Where the embedded stack's development keys come from when MERCHANT_API_KEYS or OPERATOR_API_KEYS is unset
     * (`npm start`: kept in the data folder, ./development-keys.ts); unset: new keys for this run.
     */
    developmentKeys?: (dataDir: string) => DevelopmentKeys;
  } = {},
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
  const kept =
    e.MERCHANT_API_KEYS === undefined || e.OPERATOR_API_KEYS === undefined
      ? options.developmentKeys?.(e.TEMPORAL_DATA_DIR)
      : undefined;
  const merchantApiKeys =
    e.MERCHANT_API_KEYS === undefined
      ? { keys: [{ name: DEV_API_KEY_NAME, key: kept?.merchant ?? generateApiKey() }], generated: true }
      : { keys: parseMerchantApiKeys(e.MERCHANT_API_KEYS).keys, generated: false };
  const developmentSecret = embeddedBank && !e.CALLBACK_SIGNING_SECRETS && !e.CALLBACK_SIGNING_MASTER_SECRETS;
  const callbacks = {
    allowList: callbackAllowList(e.CALLBACK_ALLOWED_ORIGINS, embeddedBank),
    builtInAllowList: e.CALLBACK_ALLOWED_ORIGINS === undefined,
    signingSecrets: e.CALLBACK_SIGNING_SECRETS ?? [],
    signingMasters: e.CALLBACK_SIGNING_MASTER_SECRETS ?? (developmentSecret ? [DEVELOPMENT_SIGNING_MASTER_SECRET] : []),
    developmentSecret,
    payloadVersion: e.CALLBACK_PAYLOAD_VERSION,
    retryWindowMs: e.CALLBACK_RETRY_WINDOW ?? DEFAULT_CALLBACK_RETRY_WINDOW_MS,
  };
  const merchants = loadMerchants(e, merchantApiKeys.keys, callbacks);
  const operatorApiKeys =
    e.OPERATOR_API_KEYS === undefined
      ? { keys: [{ name: DEV_OPERATOR_KEY_NAME, key: kept?.operator ?? generateApiKey() }], generated: true }
      : { keys: parseOperatorApiKeys(e.OPERATOR_API_KEYS).keys, generated: false };
  return {
    nodeEnv: e.NODE_ENV ?? 'development',
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    tracing: tracingFromEnv(e),
    port: e.PORT,
    internalPort: e.INTERNAL_PORT,
    workerMetricsPort: e.WORKER_METRICS_PORT,
    // The embedded stack (npm start, role `all`) binds every listener but the public one to this machine only.
    internalHost: e.INTERNAL_HOST ?? (options.role === 'api' ? ALL_INTERFACES_HOST : LOOPBACK_HOST),
    workerMetricsHost: e.WORKER_METRICS_HOST ?? (options.role === 'worker' ? ALL_INTERFACES_HOST : LOOPBACK_HOST),
    merchantApiKeys,
    merchants,
    operatorApiKeys,
    consentAssignment: {
      setting: e.CONSENT_ASSIGNMENT,
      rule: consentAssignmentFor(e.CONSENT_ASSIGNMENT, merchants.ids().length),
    },
    developmentKeysFile: kept?.file,
    temporal: temporalSettings(e, temporal.profile),
    bank: {
      embedded: embeddedBank,
      authUrl: e.BANK_AUTH_URL,
      baseUrl: e.BANK_BASE_URL,
      clientId: e.BANK_CLIENT_ID ?? DEV_DEFAULTS.BANK_CLIENT_ID,
      clientSecret: e.BANK_CLIENT_SECRET ?? DEV_DEFAULTS.BANK_CLIENT_SECRET,
      sandboxPort: e.SANDBOX_PORT,
      maxReadsPerSecond: e.BANK_MAX_READS_PER_SECOND,
    },
    worker: workerSettings(e),
    shutdown: {
      drainDelayMs: e.SHUTDOWN_DRAIN_DELAY ?? (options.role === 'api' ? DEFAULT_API_DRAIN_DELAY_MS : 0),
      gracePeriodMs: e.SHUTDOWN_GRACE_PERIOD ?? DEFAULT_SHUTDOWN_GRACE_PERIOD_MS,
      workerGraceMs: e.WORKER_SHUTDOWN_GRACE_TIME ?? DEFAULT_WORKER_SHUTDOWN_GRACE_MS,
    },
    settings: resolveServiceSettings(e).settings,
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
    failedAuthentications: {
      per15Minutes:
        e.FAILED_AUTHENTICATIONS_PER_15_MINUTES ??
        e.CONSOLE_SIGN_IN_ATTEMPTS_PER_15_MINUTES ??
        DEFAULT_FAILED_AUTHENTICATIONS,
    },
    console: {
      sessionsPerMerchant: e.CONSOLE_SESSIONS_PER_MERCHANT,
    },
    codec: {
      // The embedded dev server's Web UI, under either name a browser may use for it.
      corsOrigins: e.CODEC_CORS_ORIGINS ?? [
        `http://localhost:${e.TEMPORAL_UI_PORT}`,
        `http://127.0.0.1:${e.TEMPORAL_UI_PORT}`,
      ],
    },
    callbacks,
    audit: e.AUDIT_LOG ?? defaultAuditLogSetting(e.TEMPORAL_DATA_DIR),
    merchantKeys: merchantKeySettings(e),
    env,
  };
}

/** Where Temporal is and what the workers join (the profile as src/temporal/profile.ts resolved it). */
function temporalSettings(e: Env, profile: TemporalProfile): Config['temporal'] {
  return {
    address: profile.address,
    namespace: profile.namespace,
    connection: {
      addressFrom: profile.addressFrom,
      apiKey: profile.apiKey,
      tls: profile.tls,
    },
    taskQueue: e.TASK_QUEUE,
    deployment: { name: e.WORKER_DEPLOYMENT_NAME, buildId: e.WORKER_BUILD_ID },
    devServer: {
      port: e.TEMPORAL_DEV_SERVER_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      uiCodecPort: e.TEMPORAL_UI_CODEC_PORT,
      dataDir: e.TEMPORAL_DATA_DIR,
    },
  };
}

/** Where merchants' payload keys are, and whether payloads are written under them. */
function merchantKeySettings(e: Env): Config['merchantKeys'] {
  return {
    store: e.MERCHANT_KEY_STORE ?? defaultMerchantKeyStoreSetting(e.TEMPORAL_DATA_DIR),
    // Written under merchant keys only once MERCHANT_KEY_STORE names a store: processes (containers) may not share
    // the default file, and the typed client reads with the master keys alone (docs/security.md). Until then merchant
    // keys are read, and everything is written under the master.
    encrypt: (e.MERCHANT_KEY_ENCRYPTION ?? (e.MERCHANT_KEY_STORE ? 'on' : 'decrypt-only')) === 'on',
    cacheTtlMs: e.MERCHANT_KEY_CACHE_TTL ?? DEFAULT_MERCHANT_KEY_CACHE_TTL_MS,
  };
}

/** One worker's cache, slots and pollers (pollers unset: min(10, the slots), as the SDK does). */
function workerSettings(e: Env): Config['worker'] {
  return {
    maxCachedWorkflows: e.WORKER_MAX_CACHED_WORKFLOWS,
    memoryLimitBytes: e.WORKER_MEMORY_LIMIT,
    tuner: e.WORKER_TUNER,
    targetMemoryUsage: e.WORKER_TARGET_MEMORY_USAGE,
    targetCpuUsage: e.WORKER_TARGET_CPU_USAGE,
    maxConcurrentWorkflowTaskExecutions: e.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
    maxConcurrentActivityTaskExecutions: e.WORKER_MAX_CONCURRENT_ACTIVITIES,
    maxWorkflowTaskPollers:
      e.WORKER_MAX_WORKFLOW_POLLERS ?? Math.min(DEFAULT_MAX_POLLERS, e.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS),
    maxActivityTaskPollers:
      e.WORKER_MAX_ACTIVITY_POLLERS ?? Math.min(DEFAULT_MAX_POLLERS, e.WORKER_MAX_CONCURRENT_ACTIVITIES),
  };
}

/**
 * The merchants whose secrets derive from the development master: on the embedded stack with neither
 * CALLBACK_SIGNING_MASTER_SECRETS nor CALLBACK_SIGNING_SECRETS set, those without callbackSigningSecrets of their own
 * in MERCHANTS_FILE. Empty when no merchant uses it: start-up warns (worker) and says where each merchant reads its
 * secret (`npm start` banner) only otherwise, naming these merchants.
 */
export function merchantsOnDevelopmentSecret(config: Pick<Config, 'callbacks' | 'merchants'>): string[] {
  if (!config.callbacks.developmentSecret) return [];
  return config.merchants
    .ids()
    .filter((id) => config.merchants.resolve(id).callbacks.signingMasters?.includes(DEVELOPMENT_SIGNING_MASTER_SECRET));
}

/** The merchant directory, or a ConfigError naming MERCHANTS_FILE (with the merchant and field). */
function loadMerchants(
  e: Env,
  keys: MerchantApiKey[],
  callbacks: {
    allowList: CallbackAllowList;
    builtInAllowList: boolean;
    signingSecrets: string[];
    signingMasters: string[];
    payloadVersion: CallbackPayloadVersion;
    retryWindowMs: number;
  },
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
    defaults: {
      allowList: callbacks.allowList,
      builtInAllowList: callbacks.builtInAllowList,
      signingSecrets: callbacks.signingSecrets,
      signingMasters: callbacks.signingMasters,
      payloadVersion: callbacks.payloadVersion,
      retryWindowMs: callbacks.retryWindowMs,
      transactionsCallbackUrl: e.TRANSACTIONS_CALLBACK_URL,
      limits: {
        requestsPerMinute: e.MERCHANT_REQUESTS_PER_MINUTE,
        maxLongPolls: e.MERCHANT_MAX_LONG_POLLS,
        minPollIntervalMs: e.MERCHANT_MIN_POLL_INTERVAL ?? DEFAULT_MERCHANT_LIMITS.minPollIntervalMs,
        creationsPerMinute: e.MERCHANT_CREATIONS_PER_MINUTE,
        refreshesPerMinute: e.MERCHANT_REFRESHES_PER_MINUTE,
        maxConsents: e.MERCHANT_MAX_CONSENTS,
        maxOpenApplications: e.MERCHANT_MAX_OPEN_APPLICATIONS,
        maxLivePages: e.MERCHANT_MAX_LIVE_PAGES,
        callbackResendsPerMinute: e.MERCHANT_CALLBACK_RESENDS_PER_MINUTE,
      },
    },
  });
  if (!directory) throw new ConfigError(problems);
  return directory;
}
