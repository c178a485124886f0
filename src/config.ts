import { z } from 'zod';
import {
  DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS,
  parsePayloadEncryptionKeys,
  type PayloadEncryptionKey,
} from './security/payload-codec';
import { WEBHOOK_SECURITY_HEADER_PATTERN } from './shared/bank-wire';

/**
 * The whole environment in one zod schema (DESIGN.md "Environment"). loadConfig(env) is called only by
 * entry points; a bad or missing value stops start-up with a ConfigError naming each variable.
 *
 * Two shapes:
 * - embedded (BANK_BASE_URL unset): the bank sandbox is started in-process and every secret has a
 *   development default, so `npm start` works with nothing configured;
 * - real bank (BANK_BASE_URL set): BANK_AUTH_URL, BANK_CLIENT_ID, BANK_CLIENT_SECRET, PUBLIC_BASE_URL,
 *   WEBHOOK_HASH_SECRET and PAYLOAD_ENCRYPTION_KEYS are required, and no development default is used.
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

const EnvSchema = z
  .object({
    NODE_ENV: optionalString,
    LOG_LEVEL: z.preprocess(
      emptyToUndefined,
      z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    ),
    PORT: port(3000),

    // Temporal: unset address → the embedded dev server. The connection itself (API key, TLS) is read by
    // @temporalio/envconfig from the same environment (TEMPORAL_API_KEY, TEMPORAL_TLS_*).
    TEMPORAL_ADDRESS: z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/, 'must be host:port, for example localhost:7233')
        .optional(),
    ),
    TEMPORAL_NAMESPACE: z.preprocess(emptyToUndefined, z.string().min(1).default('default')),
    TASK_QUEUE: z.preprocess(emptyToUndefined, z.string().min(1).default('paylater')),
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
    WEBHOOK_SECURITY_HEADER: z
      .string()
      .regex(WEBHOOK_SECURITY_HEADER_PATTERN, 'must match [ a-zA-Z0-9=+/]* (the bank accepts nothing else)')
      .default(''),
    /** Optional merchant endpoint that receives changed accounts of transactionEvents. */
    TRANSACTIONS_CALLBACK_URL: optionalUrl,

    // Customer data in Temporal: the first key encrypts, every key decrypts. Unset: the embedded default's
    // development key (a real bank requires keys).
    PAYLOAD_ENCRYPTION_KEYS: payloadKeys,
    /** Browser origins allowed to call the codec endpoint (the Temporal Web UI); default: the embedded UI's. */
    CODEC_CORS_ORIGINS: origins,
  })
  .superRefine((env, ctx) => {
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
    ] as const) {
      if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required when BANK_BASE_URL is set' });
    }
  });

export type Env = z.infer<typeof EnvSchema>;

/** Sizing of one worker process (Worker options; src/worker.ts applies them). */
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
  port: number;
  temporal: {
    /** Undefined: start the embedded dev server. */
    address?: string;
    namespace: string;
    taskQueue: string;
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
  webhooks: {
    publicBaseUrl: string;
    hashSecret: string;
    securityHeader: string;
  };
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
  /** The raw environment, for @temporalio/envconfig (TEMPORAL_API_KEY, TEMPORAL_TLS_*). */
  env: Record<string, string | undefined>;
}

export class ConfigError extends Error {
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(
      `Invalid configuration:\n${issues.map((i) => `  - ${i.variable}: ${i.message}`).join('\n')}\n` +
        'See .env.example and the README\'s "Configuration" table.',
    );
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? '(environment)'),
        message: issue.message,
      })),
    );
  }
  const e = parsed.data;
  const embeddedBank = !e.BANK_BASE_URL;
  return {
    nodeEnv: e.NODE_ENV ?? 'development',
    logLevel: e.LOG_LEVEL,
    port: e.PORT,
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TASK_QUEUE,
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
    webhooks: {
      publicBaseUrl: e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`,
      hashSecret: e.WEBHOOK_HASH_SECRET ?? DEV_DEFAULTS.WEBHOOK_HASH_SECRET,
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
    env,
  };
}
