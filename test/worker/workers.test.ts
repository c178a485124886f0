import { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import type { Activities } from '../../src/activities';
import { loadConfig } from '../../src/config';
import { BANK_READ_ACTIVITIES, bankReadsTaskQueue } from '../../src/shared/task-queues';
import { createWorker, type PaylaterWorkers } from '../../src/worker/factory';
import { bankReadsProbeWorkflow } from '../fixtures/bank-reads-workflows';
import {
  bundleWorkflows,
  connectTestTemporal,
  eventually,
  testDataConverter,
  type TemporalTestContext,
} from '../helpers/temporal';

/** The worker process's two Workers on the suite's real dev server, with typed fake activities. */
const fakeActivities = {
  createApplication: jest.fn<ReturnType<Activities['createApplication']>, Parameters<Activities['createApplication']>>(
    () => Promise.resolve({ financeApplicationId: 'fa-1', status: 'CREATED' }),
  ),
  getApplicationStatus: jest.fn<
    ReturnType<Activities['getApplicationStatus']>,
    Parameters<Activities['getApplicationStatus']>
  >(() => Promise.resolve({ status: 'IN_PROGRESS', webhooksKnown: false })),
  pollApplicationStatus: jest.fn<
    ReturnType<Activities['pollApplicationStatus']>,
    Parameters<Activities['pollApplicationStatus']>
  >(() => Promise.resolve({ status: 'IN_PROGRESS', webhooksKnown: false })),
  startRefresh: jest.fn<ReturnType<Activities['startRefresh']>, Parameters<Activities['startRefresh']>>(() =>
    Promise.resolve({ taskId: 't-1' }),
  ),
  notifyMerchant: jest.fn<ReturnType<Activities['notifyMerchant']>, Parameters<Activities['notifyMerchant']>>(() =>
    Promise.resolve({ delivered: true, status: 200 }),
  ),
  checkCallbackUrl: jest.fn<ReturnType<Activities['checkCallbackUrl']>, Parameters<Activities['checkCallbackUrl']>>(
    () => Promise.resolve({ allowed: true, origin: 'https://shop.example' }),
  ),
  readClock: jest.fn<ReturnType<Activities['readClock']>, Parameters<Activities['readClock']>>(() =>
    Promise.resolve({ nowMs: Date.now() }),
  ),
  readUndeliveredCallbacks: jest.fn<
    ReturnType<Activities['readUndeliveredCallbacks']>,
    Parameters<Activities['readUndeliveredCallbacks']>
  >(() => Promise.resolve({ callbacks: [], dropped: 0 })),
} satisfies Activities;

describe('createWorker: the main and bank-reads workers of one process', () => {
  let t: TemporalTestContext;
  let workers: PaylaterWorkers;
  let running: Promise<void>;
  const config = loadConfig({
    WORKER_MAX_CACHED_WORKFLOWS: '300',
    WORKER_MAX_ACTIVITY_POLLERS: '3',
    BANK_MAX_READS_PER_SECOND: '7',
  });

  beforeAll(async () => {
    t = await connectTestTemporal();
    workers = await createWorker({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      activities: fakeActivities,
      dataConverter: t.dataConverter,
      workflowBundle: await bundleWorkflows(require.resolve('../fixtures/bank-reads-workflows')),
      tuning: config.worker,
      bankMaxReadsPerSecond: config.bank.maxReadsPerSecond,
    });
    running = workers.run();
  });
  afterAll(async () => {
    workers?.shutdown();
    await running;
    await t?.close();
  });

  it('runs both, the main one on TASK_QUEUE with every activity, the other on its bank-reads queue with the reads only', () => {
    const { main, bankReads } = workers.workers;
    expect(workers.getState()).toBe('RUNNING');
    expect(main.options.taskQueue).toBe(t.taskQueue);
    expect([...main.options.activities.keys()].sort()).toEqual(Object.keys(fakeActivities).sort());
    expect(bankReads.options.taskQueue).toBe(`${t.taskQueue}-bank-reads`);
    expect([...bankReads.options.activities.keys()].sort()).toEqual([...BANK_READ_ACTIVITIES].sort());
  });

  it('applies the sizing from the configuration', () => {
    const { main, bankReads } = workers.workers;
    expect(main.options.maxCachedWorkflows).toBe(300);
    expect(main.options.workflowTaskPollerBehavior).toEqual({ type: 'simple-maximum', maximum: 10 });
    for (const worker of [main, bankReads]) {
      expect(worker.options.activityTaskPollerBehavior).toEqual({ type: 'simple-maximum', maximum: 3 });
    }
  });

  it('sets the bank read ceiling on the bank-reads task queue, as the server reports it', async () => {
    // The server learns the limit from the worker's first poll of that queue: wait for it (bounded).
    const effectiveRateLimit = await eventually(async () => {
      const { effectiveRateLimit: limit } = await t.connection.workflowService.describeTaskQueue({
        namespace: t.namespace,
        taskQueue: { name: bankReadsTaskQueue(t.taskQueue) },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        reportConfig: true,
      });
      return limit?.rateLimitSource === temporal.api.enums.v1.RateLimitSource.RATE_LIMIT_SOURCE_WORKER
        ? limit
        : undefined;
    });
    expect(effectiveRateLimit).toMatchObject({ requestsPerSecond: 7 });
  });

  it('serves a read that a workflow schedules on the bank-reads queue', async () => {
    const status = await t.client.workflow.execute(bankReadsProbeWorkflow, {
      taskQueue: t.taskQueue,
      workflowId: `bank-reads-probe-${t.taskQueue}`,
      args: [{ financeApplicationId: 'fa-1' }],
    });
    expect(status).toBe('IN_PROGRESS');
    expect(fakeActivities.getApplicationStatus).toHaveBeenCalledWith(
      expect.objectContaining({ financeApplicationId: 'fa-1', source: 'poll' }),
    );
  });
});

describe('createWorker when the workflow code cannot load', () => {
  it('fails, and leaves no worker holding the connection', async () => {
    const address = process.env.TEMPORAL_TEST_ADDRESS!;
    const connection = await NativeConnection.connect({ address });
    try {
      await expect(
        createWorker({
          connection,
          namespace: 'default',
          taskQueue: 'never-polled',
          activities: fakeActivities,
          dataConverter: testDataConverter,
          workflowBundle: { code: 'this is not javascript (' },
        }),
      ).rejects.toThrow();
    } finally {
      // Throws while a Worker still holds a reference to the connection.
      await connection.close();
    }
  });
});

describe('createWorker with WORKER_TUNER=resource-based and the cache from WORKER_MEMORY_LIMIT', () => {
  it('hands out slots under one memory and CPU target for both workers, up to the slot counts, and serves a read', async () => {
    const t = await connectTestTemporal();
    const config = loadConfig({
      WORKER_TUNER: 'resource-based',
      WORKER_TARGET_MEMORY_USAGE: '0.95',
      WORKER_TARGET_CPU_USAGE: '0.95',
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '8',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '12',
      WORKER_MEMORY_LIMIT: '1Gi',
    });
    const workers = await createWorker({
      connection: t.nativeConnection,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      activities: fakeActivities,
      dataConverter: t.dataConverter,
      workflowBundle: await bundleWorkflows(require.resolve('../fixtures/bank-reads-workflows')),
      tuning: config.worker,
    });
    const running = workers.run();
    try {
      const { main, bankReads } = workers.workers;
      // (1 GiB × 0.75 - 400 MiB) / 0.6 MiB: src/worker/sizing.ts.
      expect(main.options.maxCachedWorkflows).toBe(613);
      expect(main.options.tuner).toMatchObject({
        workflowTaskSlotSupplier: { type: 'resource-based', maximumSlots: 8 },
        activityTaskSlotSupplier: { type: 'resource-based', maximumSlots: 12 },
      });
      // One controller: both workers steer by the same measurement.
      const controllerOf = (w: typeof main) =>
        (w.options.tuner as { resourceBasedTunerConfig?: { controller?: unknown } }).resourceBasedTunerConfig
          ?.controller;
      expect(controllerOf(main)).toBeDefined();
      expect(controllerOf(bankReads)).toBe(controllerOf(main));
      const status = await t.client.workflow.execute(bankReadsProbeWorkflow, {
        taskQueue: t.taskQueue,
        workflowId: `bank-reads-probe-tuned-${t.taskQueue}`,
        args: [{ financeApplicationId: 'fa-2' }],
      });
      expect(status).toBe('IN_PROGRESS');
    } finally {
      workers.shutdown();
      await running;
      await t.close();
    }
  });
});
