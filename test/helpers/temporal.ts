import { Worker, type WorkerOptions } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflows, testDataConverter, type TemporalTestContext } from '../../tools/harness/temporal-fixtures';
import { contractSearchAttributeTypes } from '../../src/temporal/dev-server';
import { BANK_READ_ACTIVITIES, bankReadsTaskQueue } from '../../src/shared/task-queues';
import { findTemporalTestServer } from '../../src/temporal/binaries';
import { NO_TRACING_SINKS } from '../../src/telemetry/tracing';

export {
  bundleWorkflows,
  connectTestTemporal,
  quietBundlerLogger,
  TEST_PAYLOAD_ENCRYPTION_KEYS,
  testDataConverter,
  testPayloadCodec,
  type TemporalTestContext,
} from '../../tools/harness/temporal-fixtures';

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
