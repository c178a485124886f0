import { z } from 'zod';

/** A process that reads the configuration: `npm start` (main), `npm run api`, `npm run worker`. */
export type ConfigProcess = 'start' | 'api' | 'worker';

export const ALL: readonly ConfigProcess[] = ['start', 'api', 'worker'];
export const START_API: readonly ConfigProcess[] = ['start', 'api'];
export const START_WORKER: readonly ConfigProcess[] = ['start', 'worker'];

/**
 * The groups of settings, in the order docs/configuration.md and .env.example show them. `see` is a page of the
 * repository (docs/…), `note` what the whole group shares.
 */
export const SECTIONS = {
  process: { title: 'Process and logs' },
  listeners: {
    title: 'HTTP listeners',
    see: 'docs/configuration.md#ports',
    note: 'The public listener is the only one the bank must reach; the others are for merchants, operators and monitoring.',
  },
  tracing: {
    title: 'Tracing',
    see: 'docs/operations.md#tracing',
    note: 'OpenTelemetry: off while no endpoint is set.',
  },
  merchants: {
    title: 'Merchants and operators',
    see: 'docs/merchant-api.md#merchants',
    note:
      "Every merchant's budgets apply per API process unless its MERCHANTS_FILE entry sets its own; beyond them 429 " +
      '(docs/merchant-api.md#budgets).',
  },
  temporal: {
    title: 'Temporal',
    see: 'docs/deploying.md',
    note:
      'Decided as the `temporal` CLI decides them (@temporalio/envconfig): a profile of a TOML config file, then the ' +
      'variables over it, each winning over the profile\'s value. Our defaults only fill the gaps: namespace "default"; ' +
      'no address at all starts the embedded dev server. A profile looks like `[profile.prod]` with `address = ' +
      '"my-namespace.a1b2c.tmprl.cloud:7233"`, `namespace = "my-namespace.a1b2c"` and `api_key = "..."` (or, for ' +
      'mTLS, `[profile.prod.tls]` with `client_cert_path` and `client_key_path`).',
  },
  workerSizing: {
    title: 'Worker sizing',
    see: 'docs/operations.md#sizing-and-scaling-a-worker',
    note: 'Per worker process; figures in docs/benchmarks.md.',
  },
  shutdown: {
    title: 'Shutdown',
    see: 'docs/operations.md#shutdown-and-draining',
    note: 'Durations from 0 to 10m.',
  },
  bank: { title: 'The bank', note: 'All required once BANK_BASE_URL is set (a real bank).' },
  lifecycle: {
    title: "The bank's vocabulary and the lifecycle of new workflows",
    see: 'docs/operations.md#configuration',
    note:
      'Durations: 500ms, 30s, 5m, 1h, 30d or whole milliseconds. Merchants override the poll policy per request, and ' +
      'a consent refresh its timeout and quiet period.',
  },
  webhooks: { title: 'Webhooks', see: 'docs/security.md#webhook-secrets-rotation' },
  callbacks: { title: 'Merchant callbacks', see: 'docs/security.md#signed-merchant-callbacks' },
  payloads: { title: 'Customer data in Temporal', see: 'docs/security.md#customer-data-in-temporal' },
  audit: { title: 'Audit trail', see: 'docs/security.md#audit-trail' },
  merchantKeys: { title: 'A payload key per merchant', see: 'docs/security.md#a-payload-key-per-merchant' },
} satisfies Record<string, { title: string; see?: string; note?: string }>;

export type Section = keyof typeof SECTIONS;

/** What a variable is, for people: docs/configuration.md and .env.example are generated from it. */
export interface VariableDoc {
  section: Section;
  /** The processes that read it. */
  processes: readonly ConfigProcess[];
  /** What it does; the one description of the variable. */
  description: string;
  /** The default in words, where the schema's alone (unset, or a fixed value) does not say it. */
  default?: string;
  /** .env.example's commented-out value(s); none: the schema's default, else empty. */
  example?: string | readonly string[];
  /** .env.example sets it to the schema's default instead of showing it commented out. */
  set?: true;
}

/** The documentation of every variable of the schema (ENV_SHAPE), keyed by its zod schema. */
export const VARIABLE_DOCS = z.registry<VariableDoc>();

/**
 * `schema` documented: a copy registered in VARIABLE_DOCS, so that variables sharing one kind of value (an optional
 * string, a URL) each keep their own entry. Parsing is the schema's, unchanged.
 */
export function documented<T extends z.ZodType>(schema: T, doc: VariableDoc): T {
  const copy = schema.clone();
  VARIABLE_DOCS.add(copy, doc);
  return copy;
}

/** A variable's documentation; an error when the schema has none (npm run docs:config and the tests fail on it). */
export function docOf(name: string, schema: z.ZodType): VariableDoc {
  const doc = VARIABLE_DOCS.get(schema);
  if (!doc) throw new Error(`${name} has no documentation: give it documented(schema, {...}) in src/config/schema.ts`);
  return doc;
}
