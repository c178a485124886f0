import type { DeploymentVersion } from '../../src/temporal/worker-deployment';
import { MemoryAuditLog, type AuditLog } from '../../src/audit/audit-log';
import type { Server } from 'node:http';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import type { WorkflowBundleOption, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import pino from 'pino';
import type { Logger } from '../../src/telemetry/logging';
import { authenticateOperator, createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { codecRoutes } from '../../src/api/resources/codec/routes';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics, type Metrics } from '../../src/api/metrics';
import { FailedAuthentications } from '../../src/api/auth-failures';
import {
  createActivities,
  createBankClient,
  callbackDispatchers,
  ReadPacer,
  type Activities,
  type BankClientHandle,
} from '../../src/activities';
import { startSandbox, type RunningSandbox, type SandboxOptions } from '../../src/sandbox';
import { loadConfig, type WebhookSecrets, type WebhookSettings, type WorkerTuning } from '../../src/config';
import { parseAllowedOrigins, type CallbackAllowList } from '../../src/security/callback-url';
import type { MerchantApiKey, OperatorApiKey } from '../../src/security/api-keys';
import { applicationRecords } from '../../src/temporal/application-records';
import { buildMerchantDirectory, DEFAULT_MERCHANT_LIMITS, type MerchantsFile } from '../../src/config/merchants';
import { CURRENT_CALLBACK_PAYLOAD_VERSION, type CallbackPayloadVersion } from '../../src/activities/callback-payload';
import { createPayloadCodec, type PayloadEncryptionKey } from '../../src/security/payload-codec';
import { checkTemporal } from '../../src/temporal/connection';
import { createDataConverter } from '../../src/temporal/data-converter';
import { createWorker, type PaylaterWorkers } from '../../src/worker/factory';
import type { Tracing } from '../../src/telemetry/tracing';
import type { ServiceSettings } from '../../src/shared/application-settings';
import type { ConsentAssignment } from '../../src/shared/consent-assignment';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/worker/metrics';
import { TEST_CALLBACK_SIGNING_MASTER_SECRET, TEST_CALLBACK_SIGNING_SECRET, TEST_MERCHANT } from './merchant-fixtures';
import { callbackLedgerAccess } from '../../src/client/undelivered-callbacks';
import { readCallbackSecretGenerations } from '../../src/client/merchant-secrets';
import { recordOpenApiAnswers, type OpenApiRecorder } from './openapi';
import { bundleWorkflows, connectTestTemporal, testPayloadCodec, type TemporalTestContext } from './temporal-fixtures';

export interface TestStackOptions {
  /** Overrides of the sandbox options (fast lifecycle, immediate account webhooks by default). */
  sandbox?: Partial<SandboxOptions>;
  transactionsCallbackUrl?: string;
  /** The Webhook Security Header shared by the sandbox and the receiver. */
  securityHeader?: string;
  hashSecret?: string;
  /** WEBHOOK_HASH_SECRET_PREVIOUS of the receiver. */
  previousHashSecret?: string;
  /** The facade's keys; one `test` key when absent (TEST_API_KEY). */
  merchantApiKeys?: MerchantApiKey[];
  /** MERCHANTS_FILE's content: per-merchant settings over the stack's globals (callbacks, limits). */
  merchantsFile?: MerchantsFile;
  /** The operators' keys (/codec); one `test-operator` key when absent (TEST_OPERATOR_KEY). */
  operatorApiKeys?: OperatorApiKey[];
  /** CONSENT_ASSIGNMENT's rule; absent: `auto` (merchants claim with one merchant, operators assign otherwise). */
  consentAssignment?: ConsentAssignment;
  /**
   * The wrong keys allowed per client address on the facade, /codec and the console's sign-in
   * (FAILED_AUTHENTICATIONS_PER_15_MINUTES, src/api/auth-failures.ts). Default: no practical limit, since every test
   * sends from 127.0.0.1 and many send wrong keys on purpose; a test of the limit sets it.
   */
  failedAuthentications?: { attempts?: number; windowMs?: number };
  /** CONSOLE_SESSIONS_PER_MERCHANT; its default when absent. */
  consoleSessionsPerMerchant?: number;
  /** AppDeps.startDeadlineMs: how long a merchant's start call waits before a 503. */
  startDeadlineMs?: number;
  /** AppDeps.readDeadlineMs: how long a merchant's plain read waits for a worker before a 503. */
  readDeadlineMs?: number;
  /**
   * Merchant callbacks: CALLBACK_ALLOWED_ORIGINS (default: loopback origins allowed, as on the embedded stack, with
   * one merchant), CALLBACK_SIGNING_SECRETS (default with one merchant: TEST_CALLBACK_SIGNING_SECRET) and
   * CALLBACK_SIGNING_MASTER_SECRETS (default with several, or with `signingSecrets: []`:
   * TEST_CALLBACK_SIGNING_MASTER_SECRET), for the facade and the worker alike.
   */
  callbacks?: {
    allowedOrigins?: string;
    signingSecrets?: string[];
    signingMasters?: string[];
    payloadVersion?: CallbackPayloadVersion;
  };
  /** Worker sizing and the bank read ceiling; the production defaults (loadConfig({})) when absent. */
  worker?: {
    tuning?: WorkerTuning;
    bankMaxReadsPerSecond?: number;
    /** Join this Worker Deployment Version (versioned workers); absent: unversioned, as most tests run. */
    deployment?: DeploymentVersion;
  };
  /** PAYLOAD_ENCRYPTION_KEYS of the stack's client, app and worker; the suite's (TEST_PAYLOAD_ENCRYPTION_KEYS) when absent. */
  payloadEncryptionKeys?: PayloadEncryptionKey[];
  /**
   * Tracing for the stack's client and worker (startTracing with a test span processor, registered by the test file
   * that wants it): spans of the facade, the receiver, the sandbox and the bank client over the same provider.
   */
  tracing?: Tracing;
  /** AppDeps.settings: the settings of workflows the facade and the receiver start (config.settings); built-in defaults when absent. */
  settings?: ServiceSettings;
  /** The apps' logger (silent, or TEST_LOG_LEVEL, when absent): a test that reads the lines passes createLogger's. */
  logger?: Logger;
  /**
   * The worker's workflow code; src/workflows bundled with the tracing interceptors when absent (as every test
   * worker). A bench passes the production bundle without them (loadWorkflowBundle in src/worker/prebuilt-workflow-bundle.ts).
   */
  workflowBundle?: WorkflowBundleOption;
  /** AppDeps.audit: the audit trail; a MemoryAuditLog when absent (stack.audit either way). */
  audit?: AuditLog;
  /** The codec of every client and the worker (a MerchantPayloadCodec); wins over payloadEncryptionKeys. */
  payloadCodec?: PayloadCodec;
}

/** The merchant key of the stack's default `test` entry. */
export const TEST_API_KEY = 'test-merchant-api-key-0123456789abcdef';
/** The operator key of the stack's default `test-operator` entry. */
export const TEST_OPERATOR_KEY = 'test-operator-api-key-0123456789abcdef';

export interface TestStack {
  t: TemporalTestContext;
  sandbox: RunningSandbox;
  /** The public listener (the bank's webhooks, /healthz), as PORT serves it, on a free port. */
  publicUrl: string;
  /**
   * The internal listener (merchant facade, /readyz, /metrics, /codec behind the operator keys), as INTERNAL_PORT
   * serves it, on a free port.
   */
  internalUrl: string;
  servers: { public: Server; internal: Server };
  /** The first configured merchant key (TEST_API_KEY by default). */
  apiKey: string;
  /** fetch on the internal listener with `Authorization: Bearer <apiKey>` (headers given in `init` are kept). */
  facade(path: string, init?: RequestInit): Promise<Response>;
  metrics: Metrics;
  /** The worker's prom-client metrics (token requests, merchant callbacks), as startWorker wires them. */
  workerMetrics: WorkerMetrics;
  /** The codec of the stack's data converter (for a codec endpoint over the same keys). */
  payloadCodec: PayloadCodec;
  dataConverter: DataConverter;
  /** The receiver's and the activities' current webhook settings (live: see setWebhooks). */
  readonly webhooks: WebhookSettings;
  /** Changes the settings both sides read per call, as a restart with new variables would (a rotation). */
  setWebhooks(changes: Partial<WebhookSecrets>): void;
  /** Replaces the facade's keys, as a restart with another MERCHANT_API_KEYS would (revocation). */
  setMerchantApiKeys(keys: MerchantApiKey[]): void;
  /** The first configured operator key (TEST_OPERATOR_KEY by default). */
  operatorKey: string;
  /**
   * Every answer of both listeners checked against the OpenAPI document as it goes out (tools/harness/openapi.ts):
   * `afterEach(() => stack.openApi.expectAllMatched())` fails a test whose answers disagree with it.
   */
  openApi: OpenApiRecorder;
  /** The apps' dependencies, for a test that builds another app on the same Temporal client. */
  appDeps: AppDeps;
  /** The audit trail both apps and the codec endpoint record in (options.audit, or one in memory). */
  audit: AuditLog;
  bank: BankClientHandle;
  activities: Activities;
  /** The running workers (main and bank-reads, as one handle), if started. */
  worker(): PaylaterWorkers | undefined;
  startWorker(): Promise<void>;
  /** Graceful shutdown of the worker (drains), as on a deploy. */
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

export { TEST_CALLBACK_SIGNING_MASTER_SECRET, TEST_CALLBACK_SIGNING_SECRET, TEST_MERCHANT };

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
/** src/workflows bundled once per test file process: restarts in a test then take milliseconds. */
function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflows(require.resolve('../../src/workflows'));
  return bundle;
}

/**
 * The whole stack in-process on real parts: the suite's Temporal dev server, the bank sandbox over HTTP,
 * the real bank client and activities, a real worker on a task queue of its own, and the real Express app.
 */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const payloadCodec =
    options.payloadCodec ??
    (options.payloadEncryptionKeys ? createPayloadCodec(options.payloadEncryptionKeys) : testPayloadCodec);
  const dataConverter = createDataConverter(payloadCodec);
  const t = await connectTestTemporal({ dataConverter, tracing: options.tracing });
  const metrics = createMetrics();
  const hashSecret = options.hashSecret ?? 'test-webhook-hash-secret-0123456789abcdef';
  const securityHeader = options.securityHeader ?? 'Basic dGVzdDp3ZWJob29r=';

  const callbackAllowList: CallbackAllowList =
    options.callbacks?.allowedOrigins === undefined
      ? { origins: [], loopback: true }
      : { origins: parseAllowedOrigins(options.callbacks.allowedOrigins).origins, loopback: false };
  const severalMerchants = (options.merchantApiKeys?.length ?? 1) > 1;
  // As loadConfig: one explicit secret only for one merchant; several derive theirs from a master.
  const signingSecrets =
    options.callbacks?.signingSecrets ??
    (severalMerchants || options.callbacks?.signingMasters ? [] : [TEST_CALLBACK_SIGNING_SECRET]);
  const signingMasters =
    options.callbacks?.signingMasters ?? (signingSecrets.length === 0 ? [TEST_CALLBACK_SIGNING_MASTER_SECRET] : []);
  const payloadVersion = options.callbacks?.payloadVersion ?? CURRENT_CALLBACK_PAYLOAD_VERSION;

  // The public app's address is needed first: it is the sandbox's account Webhook Endpoint and our PUBLIC_BASE_URL.
  let webhooks: WebhookSettings = {
    publicBaseUrl: '',
    hashSecret,
    previousHashSecret: options.previousHashSecret,
    securityHeader,
  };
  let merchantApiKeys: MerchantApiKey[] = options.merchantApiKeys ?? [{ name: 'test', key: TEST_API_KEY }];
  const operatorApiKeys: OperatorApiKey[] = options.operatorApiKeys ?? [
    { name: 'test-operator', key: TEST_OPERATOR_KEY },
  ];
  // A plain object the receivers read per request; setWebhooks changes it as rolling the API processes would.
  const receiverSecrets: WebhookSecrets = {
    hashSecret,
    previousHashSecret: options.previousHashSecret,
    securityHeader,
  };
  const built = buildMerchantDirectory({
    keys: merchantApiKeys,
    fileJson: options.merchantsFile,
    defaults: {
      allowList: callbackAllowList,
      builtInAllowList: options.callbacks?.allowedOrigins === undefined,
      signingSecrets,
      signingMasters,
      payloadVersion,
      transactionsCallbackUrl: options.transactionsCallbackUrl,
      limits: DEFAULT_MERCHANT_LIMITS,
    },
  });
  if (!built.directory) throw new Error(`test stack merchants: ${built.problems.map((p) => p.message).join('; ')}`);
  const merchants = built.directory;
  const audit = options.audit ?? new MemoryAuditLog();
  const appDeps: AppDeps = {
    audit,
    client: t.client,
    taskQueue: t.taskQueue,
    webhooks: receiverSecrets,
    get merchantApiKeys() {
      return merchantApiKeys;
    },
    merchants,
    operatorApiKeys,
    consentAssignment: options.consentAssignment,
    consoleSessionsPerMerchant: options.consoleSessionsPerMerchant,
    settings: options.settings,
    startDeadlineMs: options.startDeadlineMs,
    readDeadlineMs: options.readDeadlineMs,
    logger,
    metrics,
    authFailures: new FailedAuthentications({
      metrics,
      logger,
      attempts: options.failedAuthentications?.attempts ?? 1_000_000,
      windowMs: options.failedAuthentications?.windowMs,
    }),
    checkTemporal: () => checkTemporal(t.connection, t.namespace),
  };
  const publicServer = await listen(createPublicApp(appDeps), 0, '127.0.0.1');
  // The codec endpoint as startListeners mounts it, behind the operator keys (no Web UI origin here).
  const internalApp = createInternalApp(appDeps, {
    extraRouters: (deps) => [
      codecRoutes({
        codec: payloadCodec,
        authenticate: authenticateOperator(deps),
        corsOrigins: [],
        audit: deps.audit,
        logger: deps.logger,
      }),
    ],
  });
  const internalServer = await listen(internalApp, 0, '127.0.0.1');
  const openApi = recordOpenApiAnswers(publicServer, internalServer);
  const publicUrl = `http://127.0.0.1:${boundPort(publicServer)}`;
  const internalUrl = `http://127.0.0.1:${boundPort(internalServer)}`;
  webhooks = { ...webhooks, publicBaseUrl: publicUrl };

  const sandbox = await startSandbox({
    clientId: 'test-client',
    clientSecret: 'test-secret',
    lifecycle: { stepMs: 300 },
    webhookRetry: { attempts: 8, initialDelayMs: 100, maxDelayMs: 1_000, timeoutMs: 5_000 },
    refresh: { bankDelayMs: [50, 400] },
    ...options.sandbox,
    accountWebhook: {
      endpoint: `${publicUrl}/webhooks/accounts`,
      securityHeader,
      activation: 'immediate',
      ...options.sandbox?.accountWebhook,
    },
  });
  const workerMetrics = createWorkerMetrics({ defaultMetrics: false });
  const bank = createBankClient({
    authUrl: sandbox.url,
    baseUrl: sandbox.url,
    clientId: 'test-client',
    clientSecret: 'test-secret',
    onTokenRequest: (outcome) => workerMetrics.tokenRequests.inc({ outcome }),
  });
  const dispatchers = callbackDispatchers();
  const defaults = loadConfig({});
  const activities = createActivities({
    bank: bank.client,
    // Read at each create, as a worker restarted with the rotated WEBHOOK_HASH_SECRET would.
    webhooks: {
      publicBaseUrl: publicUrl,
      get hashSecret() {
        return webhooks.hashSecret;
      },
    },
    callbacks: { allowList: callbackAllowList, signingSecrets, signingMasters, payloadVersion },
    merchants,
    callbackSecretGenerations: (merchantId) => readCallbackSecretGenerations(t.client, merchantId),
    callbackDispatcher: (merchant) => dispatchers.for(merchant),
    readPacer: new ReadPacer(options.worker?.bankMaxReadsPerSecond ?? defaults.bank.maxReadsPerSecond),
    metrics: workerMetrics,
    applications: applicationRecords(t.client.workflowService, t.namespace),
    callbackLedger: callbackLedgerAccess(t.client, t.taskQueue),
  });

  const apiKey = merchantApiKeys[0]?.key ?? '';
  let worker: PaylaterWorkers | undefined;
  let running: Promise<void> | undefined;
  const startWorker = async () => {
    if (worker) throw new Error('worker already running');
    worker = await createWorker({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      activities,
      dataConverter,
      workflowBundle: options.workflowBundle ?? (await workflowBundle()),
      tuning: options.worker?.tuning ?? defaults.worker,
      bankMaxReadsPerSecond: options.worker?.bankMaxReadsPerSecond ?? defaults.bank.maxReadsPerSecond,
      tracing: options.tracing,
      deployment: options.worker?.deployment,
    });
    running = worker.run();
  };
  const stopWorker = async () => {
    if (!worker) return;
    worker.shutdown();
    await running;
    worker = undefined;
    running = undefined;
  };
  await startWorker();

  return {
    t,
    sandbox,
    publicUrl,
    internalUrl,
    servers: { public: publicServer, internal: internalServer },
    apiKey,
    operatorKey: operatorApiKeys[0]?.key ?? '',
    facade(path, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('authorization')) headers.set('authorization', `Bearer ${apiKey}`);
      return fetch(`${internalUrl}${path}`, { ...init, headers });
    },
    metrics,
    workerMetrics,
    payloadCodec,
    dataConverter,
    get webhooks() {
      return webhooks;
    },
    setWebhooks(changes) {
      webhooks = { ...webhooks, ...changes };
      Object.assign(receiverSecrets, changes);
    },
    setMerchantApiKeys(keys) {
      merchantApiKeys = keys;
    },
    openApi,
    appDeps,
    audit,
    bank,
    activities,
    worker: () => worker,
    startWorker,
    stopWorker,
    async close() {
      await stopWorker();
      await closeServer(publicServer, 1_000);
      await closeServer(internalServer, 1_000);
      await sandbox.close();
      await bank.close();
      await dispatchers.close();
      await t.close();
    },
  };
}
