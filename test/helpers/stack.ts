import type { Server } from 'node:http';
import type { DataConverter } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics, type Metrics } from '../../src/api/metrics';
import {
  createActivities,
  createBankClient,
  createCallbackDispatcher,
  ReadPacer,
  type Activities,
  type BankClientHandle,
} from '../../src/activities';
import { startSandbox, type RunningSandbox, type SandboxOptions } from '../../src/sandbox';
import { loadConfig, type WorkerTuning } from '../../src/config';
import {
  createPayloadCodec,
  type AesGcmPayloadCodec,
  type PayloadEncryptionKey,
} from '../../src/security/payload-codec';
import { checkTemporal } from '../../src/temporal/connection';
import { createDataConverter } from '../../src/temporal/data-converter';
import { createWorker, type PaylaterWorkers } from '../../src/worker';
import { bundleWorkflows, connectTestTemporal, testPayloadCodec, type TemporalTestContext } from './temporal';

export interface TestStackOptions {
  /** Overrides of the sandbox options (fast lifecycle, immediate account webhooks by default). */
  sandbox?: Partial<SandboxOptions>;
  transactionsCallbackUrl?: string;
  /** The Webhook Security Header shared by the sandbox and the receiver. */
  securityHeader?: string;
  hashSecret?: string;
  /** AppDeps.startDeadlineMs: how long a merchant's start call waits before a 503. */
  startDeadlineMs?: number;
  /** Worker sizing and the bank read ceiling; the production defaults (loadConfig({})) when absent. */
  worker?: { tuning?: WorkerTuning; bankMaxReadsPerSecond?: number };
  /** PAYLOAD_ENCRYPTION_KEYS of the stack's client, app and worker; the suite's (TEST_PAYLOAD_ENCRYPTION_KEYS) when absent. */
  payloadEncryptionKeys?: PayloadEncryptionKey[];
}

export interface TestStack {
  t: TemporalTestContext;
  sandbox: RunningSandbox;
  /** The real Express app (receiver + facade) on a free port. */
  apiUrl: string;
  server: Server;
  metrics: Metrics;
  /** The codec of the stack's data converter (for a codec endpoint over the same keys). */
  payloadCodec: AesGcmPayloadCodec;
  dataConverter: DataConverter;
  webhooks: { publicBaseUrl: string; hashSecret: string; securityHeader: string };
  bank: BankClientHandle;
  activities: Activities;
  /** The running workers (main and bank-reads, as one handle), if started. */
  worker(): PaylaterWorkers | undefined;
  startWorker(): Promise<void>;
  /** Graceful shutdown of the worker (drains), as on a deploy. */
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

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
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const payloadCodec = options.payloadEncryptionKeys
    ? createPayloadCodec(options.payloadEncryptionKeys)
    : testPayloadCodec;
  const dataConverter = createDataConverter(payloadCodec);
  const t = await connectTestTemporal({ dataConverter });
  const metrics = createMetrics();
  const hashSecret = options.hashSecret ?? 'test-webhook-hash-secret-0123456789abcdef';
  const securityHeader = options.securityHeader ?? 'Basic dGVzdDp3ZWJob29r=';

  // The app's address is needed first: it is the sandbox's account Webhook Endpoint and our PUBLIC_BASE_URL.
  let webhooks = { publicBaseUrl: '', hashSecret, securityHeader };
  const app = createApp({
    client: t.client,
    taskQueue: t.taskQueue,
    get webhooks() {
      return webhooks;
    },
    transactionsCallbackUrl: options.transactionsCallbackUrl,
    startDeadlineMs: options.startDeadlineMs,
    logger,
    metrics,
    checkTemporal: () => checkTemporal(t.connection, t.namespace),
  });
  const server = await listen(app, 0, '127.0.0.1');
  const apiUrl = `http://127.0.0.1:${boundPort(server)}`;
  webhooks = { publicBaseUrl: apiUrl, hashSecret, securityHeader };

  const sandbox = await startSandbox({
    clientId: 'test-client',
    clientSecret: 'test-secret',
    lifecycle: { stepMs: 300 },
    webhookRetry: { attempts: 8, initialDelayMs: 100, maxDelayMs: 1_000, timeoutMs: 5_000 },
    refresh: { bankDelayMs: [50, 400] },
    ...options.sandbox,
    accountWebhook: {
      endpoint: `${apiUrl}/webhooks/accounts`,
      securityHeader,
      activation: 'immediate',
      ...options.sandbox?.accountWebhook,
    },
  });
  const bank = createBankClient({
    authUrl: sandbox.url,
    baseUrl: sandbox.url,
    clientId: 'test-client',
    clientSecret: 'test-secret',
  });
  const callbackDispatcher = createCallbackDispatcher();
  const defaults = loadConfig({});
  const activities = createActivities({
    bank: bank.client,
    webhooks: { publicBaseUrl: apiUrl, hashSecret },
    callbackDispatcher,
    readPacer: new ReadPacer(options.worker?.bankMaxReadsPerSecond ?? defaults.bank.maxReadsPerSecond),
  });

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
      workflowBundle: await workflowBundle(),
      tuning: options.worker?.tuning ?? defaults.worker,
      bankMaxReadsPerSecond: options.worker?.bankMaxReadsPerSecond ?? defaults.bank.maxReadsPerSecond,
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
    apiUrl,
    server,
    metrics,
    payloadCodec,
    dataConverter,
    webhooks,
    bank,
    activities,
    worker: () => worker,
    startWorker,
    stopWorker,
    async close() {
      await stopWorker();
      await closeServer(server, 1_000);
      await sandbox.close();
      await bank.close();
      await callbackDispatcher.close();
      await t.close();
    },
  };
}
