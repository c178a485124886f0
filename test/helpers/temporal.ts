import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import {
  bundleWorkflowCode,
  NativeConnection,
  Worker,
  type WorkerOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { createPayloadCodec, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import { contractSearchAttributeTypes } from '../../src/temporal/dev-server';
import { BANK_READ_ACTIVITIES, bankReadsTaskQueue } from '../../src/shared/task-queues';
import { findTemporalTestServer } from '../../src/temporal/binaries';
import { createDataConverter, FAILURE_CONVERTER_PATH } from '../../src/temporal/data-converter';
import { makeDeadlineBoundRetryInterceptor } from '../../src/temporal/grpc-retry';
import {
  NO_TRACING_SINKS,
  tracingClientInterceptors,
  WORKFLOW_TRACING_INTERCEPTOR_MODULE,
  type Tracing,
} from '../../src/telemetry/tracing';

/**
 * The suite's PAYLOAD_ENCRYPTION_KEYS: a ring after one rotation (test-2 encrypts, test-1 still decrypts), so every
 * test runs encrypted, as production does. Test-only keys.
 */
export const TEST_PAYLOAD_ENCRYPTION_KEYS =
  'test-2:FBb6SfMGa/0ME0RhvhQyiY2SCXhTC0nqH/jzC7xbADI=,test-1:L4YMfOecsrgy9Mp71B2HPe8NXJmiSVZmGZIxmSICOmM=';
export const testPayloadCodec = createPayloadCodec(parsePayloadEncryptionKeys(TEST_PAYLOAD_ENCRYPTION_KEYS));
/** The data converter of the suite's clients and workers (createDataConverter, as every entry point builds it). */
export const testDataConverter: DataConverter = createDataConverter(testPayloadCodec);

/** Connections to the suite's real dev server (started once by test/setup/global-setup.ts). */
export interface TemporalTestContext {
  address: string;
  namespace: string;
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  /** The client's data converter: give it to every Worker of the test (withWorker and startTestWorker do). */
  dataConverter: DataConverter;
  /** A task queue of its own for each test file, so files running in parallel never steal each other's tasks. */
  taskQueue: string;
  close(): Promise<void>;
}

export async function connectTestTemporal(
  options: { dataConverter?: DataConverter; tracing?: Tracing } = {},
): Promise<TemporalTestContext> {
  const dataConverter = options.dataConverter ?? testDataConverter;
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run the tests through jest (global setup)');
  const namespace = 'default';
  // The same retry interceptor as the app's connection (src/temporal/connection.ts).
  const connection = await Connection.connect({ address, interceptors: [makeDeadlineBoundRetryInterceptor()] });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    namespace,
    connection,
    nativeConnection,
    dataConverter,
    // The app's client interceptors (src/temporal/connection.ts): none unless the test opted in to tracing.
    client: new Client({
      connection,
      namespace,
      dataConverter,
      interceptors: tracingClientInterceptors(options.tracing),
    }),
    taskQueue: `test-${randomUUID()}`,
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/**
 * The worker for the bank-reads task queue beside a main worker (production runs both in every worker process):
 * the same connection and activities, only the read activities registered.
 */
export function createBankReadsWorker(options: WorkerOptions): Promise<Worker> {
  const activities = (options.activities ?? {}) as Record<string, unknown>;
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    dataConverter: options.dataConverter ?? testDataConverter,
    taskQueue: bankReadsTaskQueue(options.taskQueue),
    activities: Object.fromEntries(BANK_READ_ACTIVITIES.filter((n) => n in activities).map((n) => [n, activities[n]])),
  });
}

/**
 * Runs `fn` while a worker polls (with its bank-reads companion when it has activities); both are shut down and
 * drained afterwards, whatever happens. The suite's data converter unless `options` gives one.
 */
export async function withWorker<T>(options: WorkerOptions, fn: (worker: Worker) => Promise<T>): Promise<T> {
  options = { dataConverter: testDataConverter, sinks: NO_TRACING_SINKS, ...options };
  const worker = await Worker.create(options);
  if (!options.activities) return worker.runUntil(fn(worker));
  const readsWorker = await createBankReadsWorker(options);
  return readsWorker.runUntil(worker.runUntil(fn(worker)));
}

/** The time-skipping test server (installed binary; SDK download only as a fallback) for timer-heavy tests. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = findTemporalTestServer();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: path ? { type: 'existing-path', path } : { type: 'cached-download' } },
    client: { dataConverter: testDataConverter },
  });
  // The workflows upsert the contract's search attributes; this server knows none until they are added.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: contractSearchAttributeTypes(),
  });
  return env;
}

/** Polls `probe` until it returns a value other than undefined (bounded; never used to assert timing). */
export async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `condition not met within ${timeoutMs} ms${lastError ? `: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Keeps webpack's bundling chatter out of test output; errors still show. */
export const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string) => console.error(message),
};

/** Workflow code bundled with the production failure converter (as buildWorkflowBundle bundles it). */
export function bundleWorkflows(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath,
    failureConverterPath: FAILURE_CONVERTER_PATH,
    // As the prebuilt tracing bundle (src/worker/prebuilt-workflow-bundle.ts): the tests' workers always carry them.
    workflowInterceptorModules: [WORKFLOW_TRACING_INTERCEPTOR_MODULE],
    logger: quietBundlerLogger,
  });
}

/** A worker on the test file's task queue, running until stop() (for workflow-logic tests with typed fakes). */
export async function startTestWorker(
  t: TemporalTestContext,
  options: { workflowsPath: string; activities: object },
): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const workerOptions: WorkerOptions = {
    connection: t.nativeConnection,
    dataConverter: t.dataConverter,
    taskQueue: t.taskQueue,
    workflowBundle: await bundleWorkflows(options.workflowsPath),
    activities: options.activities,
    sinks: NO_TRACING_SINKS,
  };
  const worker = await Worker.create(workerOptions);
  const readsWorker = await createBankReadsWorker(workerOptions);
  const running = Promise.all([worker.run(), readsWorker.run()]);
  return {
    worker,
    async stop() {
      worker.shutdown();
      readsWorker.shutdown();
      await running;
    },
  };
}
