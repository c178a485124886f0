import { NO_TRACING_SINKS } from '../../src/telemetry/tracing';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities, WebhookEvidence } from '../../src/activities';
import type { Activities } from '../../src/activities/types';
import { BankRejectedError } from '../../src/activities/bank/errors';
import type { ApplicationStatusResponse } from '../../src/shared/bank-wire';
import {
  financeApplicationStatusChangedSignal,
  type FinanceApplicationInput,
  type FinanceApplicationState,
} from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { DEFAULT_POLL_POLICY, pollSchedule } from '../../src/shared/poll-policy';
import { bankReadsTaskQueue } from '../../src/shared/task-queues';
import { financeApplicationWorkflow } from '../../src/workflows/finance-application/workflow';
import { bundleWorkflows, createTimeSkippingEnv, testDataConverter } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * An application lives for days: the poll policy's backoff, hours of quiet and the 30-day deadline, on the
 * time-skipping test server. The real read and polling activities run over an in-memory bank whose statuses
 * follow the server's (skipped) clock, so every figure here is in workflow time and exact, never a timing.
 */
describe('financeApplicationWorkflow over days (time-skipping test server)', () => {
  let env: TestWorkflowEnvironment;
  let bundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    bundle = await bundleWorkflows(require.resolve('../../src/workflows'));
  });
  afterAll(async () => env?.teardown());

  /**
   * A bank whose application `fa-<ref>` has status CREATED, then each scripted status from its offset after
   * creation (server time). Records the server time of every status read.
   */
  function fakeBank(script: { status: string; afterMs: number }[] = [], options: { forgetAfterMs?: number } = {}) {
    const createdAt = new Map<string, number>();
    const reads = new Map<string, number[]>();
    const now = async () => Number(await env.currentTimeMs());
    const statusOf = (id: string, at: number) => {
      const since = at - (createdAt.get(id) ?? at);
      return script.filter((s) => since >= s.afterMs).at(-1)?.status ?? 'CREATED';
    };
    const evidence = new WebhookEvidence();
    const real = createActivities({
      bank: {
        createApplication: () => Promise.reject(new Error('not used')),
        async getApplicationStatus(id: string): Promise<ApplicationStatusResponse> {
          const at = await now();
          reads.set(id, [...(reads.get(id) ?? []), at]);
          // A bank that lost the application (a sandbox restarted without its memory): 404, as the real client throws it.
          if (options.forgetAfterMs !== undefined && at - createdAt.get(id)! >= options.forgetAfterMs)
            throw new BankRejectedError('getApplicationStatus', 404, 'not_found', 'Unknown finance application');
          return { financeApplicationId: id, status: statusOf(id, at) };
        },
        startRefresh: () => Promise.reject(new Error('not used')),
      },
      webhooks: { publicBaseUrl: 'http://127.0.0.1:1', hashSecret: 'test-webhook-hash-secret-0123456789abcdef' },
      webhookEvidence: evidence,
    });
    const activities: Activities = {
      ...real,
      async createApplication({ merchantReference }) {
        const id = `fa-${merchantReference}`;
        createdAt.set(id, await now());
        return { financeApplicationId: id, status: 'CREATED' };
      },
      notifyMerchant: () => Promise.reject(new Error('not used')),
    };
    /** Read times of an application, in ms after its creation. */
    const readsOf = (ref: string) => (reads.get(`fa-${ref}`) ?? []).map((at) => at - createdAt.get(`fa-${ref}`)!);
    return { activities, readsOf, createdAt: (ref: string) => createdAt.get(`fa-${ref}`)! };
  }

  /** Runs the workflows to their end on a main worker and its bank-reads worker (as a worker process does). */
  async function run(
    activities: Activities,
    inputs: Omit<FinanceApplicationInput, 'application'>[],
    during?: (taskQueue: string) => Promise<void>,
  ): Promise<FinanceApplicationState[]> {
    const taskQueue = `ts-${randomUUID()}`;
    const main = await Worker.create({
      connection: env.nativeConnection,
      dataConverter: testDataConverter,
      taskQueue,
      workflowBundle: bundle,
      activities,
      sinks: NO_TRACING_SINKS,
    });
    const readsWorker = await Worker.create({
      connection: env.nativeConnection,
      dataConverter: testDataConverter,
      taskQueue: bankReadsTaskQueue(taskQueue),
      activities: {
        getApplicationStatus: activities.getApplicationStatus,
        pollApplicationStatus: activities.pollApplicationStatus,
      },
    });
    const work = async () => {
      const handles = await Promise.all(
        inputs.map((input) =>
          env.client.workflow.start(financeApplicationWorkflow, {
            taskQueue,
            workflowId: financeApplicationWorkflowId(TEST_MERCHANT, input.merchantReference),
            args: [{ ...input, merchantId: TEST_MERCHANT, application: { redirectUrl: 'https://shop.example/back' } }],
          }),
        ),
      );
      await during?.(taskQueue);
      return Promise.all(handles.map((h) => h.result()));
    };
    return readsWorker.runUntil(main.runUntil(work()));
  }

  const inHour = (reads: number[], hour: number) =>
    reads.filter((t) => t >= hour * HOUR && t < (hour + 1) * HOUR).length;

  it('a quiet application costs the policy’s reads per day: 12 an hour after the first hour, none wasted', async () => {
    const bank = fakeBank();
    const ref = `quiet-${randomUUID()}`;
    const [result] = await run(bank.activities, [
      { merchantId: 'test', merchantReference: ref, settings: { deadlineMs: DAY } },
    ]);
    expect(result).toMatchObject({ done: true, outcome: 'deadline', status: 'CREATED', webhooksLive: false });
    const reads = bank.readsOf(ref);
    const expected = pollSchedule(DEFAULT_POLL_POLICY, DAY, false);
    // The same count as the policy's schedule (the first read waits for the first interval, none comes after).
    expect(Math.abs(reads.length - expected.length)).toBeLessThanOrEqual(2);
    expect(reads.length).toBeLessThan(320);
    expect(inHour(reads, 0)).toBeGreaterThanOrEqual(12); // responsive at first…
    for (const hour of [1, 5, 12, 23]) expect(inHour(reads, hour)).toBeLessThanOrEqual(12); // …then 12 an hour
    // Between 10 minutes and an hour after creation: at most 20 an hour (the target the poll policy was made for).
    expect(reads.filter((t) => t >= 10 * MINUTE && t < 70 * MINUTE).length).toBeLessThanOrEqual(20);
  });

  it('finds a change after three quiet days within the current poll interval', async () => {
    const changeAfter = 3 * DAY + 7 * MINUTE + 13_000;
    const bank = fakeBank([{ status: 'COMPLETED', afterMs: changeAfter }]);
    const ref = `late-${randomUUID()}`;
    const [result] = await run(bank.activities, [
      // A cap of an hour keeps the test's read count small; the bound it proves is the cap, whatever it is.
      {
        merchantId: 'test',
        merchantReference: ref,
        settings: { noWebhookPollIntervalMs: HOUR, slowPollIntervalMs: HOUR },
      },
    ]);
    expect(result!.history.map((h) => [h.status, h.source])).toEqual([
      ['CREATED', 'create'],
      ['COMPLETED', 'poll'],
    ]);
    const found = Date.parse(result!.history[1]!.at) - bank.createdAt(ref);
    expect(found).toBeGreaterThanOrEqual(changeAfter);
    expect(found - changeAfter).toBeLessThanOrEqual(HOUR);
  });

  it('one application’s webhook makes another, which never had one, poll at the slow cap', async () => {
    const bank = fakeBank();
    const [withWebhook, without] = [`wh-${randomUUID()}`, `nowh-${randomUUID()}`];
    // One after the other on the same worker's activities: the test server skips time while any workflow
    // waits, which would expire a workflow task of a second one in flight.
    const [first] = await run(
      bank.activities,
      [{ merchantId: 'test', merchantReference: withWebhook, settings: { deadlineMs: 10 * MINUTE } }],
      async () => {
        await env.client.workflow
          .getHandle(financeApplicationWorkflowId(TEST_MERCHANT, withWebhook))
          .signal(financeApplicationStatusChangedSignal, { financeApplicationId: `fa-${withWebhook}` });
      },
    );
    const [second] = await run(bank.activities, [
      { merchantId: 'test', merchantReference: without, settings: { deadlineMs: 6 * HOUR } },
    ]);
    const results = [first!, second!];
    expect(results.map((r) => r.webhooksLive)).toEqual([true, false]);
    const reads = bank.readsOf(without);
    // Webhooks are known on this worker: after the first hour, 4 reads an hour (15 min) instead of 12.
    for (const hour of [2, 3, 4, 5]) expect(inHour(reads, hour)).toBeLessThanOrEqual(4);
    expect(Math.abs(reads.length - pollSchedule(DEFAULT_POLL_POLICY, 6 * HOUR, true).length)).toBeLessThanOrEqual(2);
  });

  it('keeps its poll across a change a webhook announced, and still finds a lost webhook’s change within the interval', async () => {
    // IN_PROGRESS and APPROVED announced by webhooks; SIGNED's webhook lost.
    const bank = fakeBank([
      { status: 'IN_PROGRESS', afterMs: HOUR },
      { status: 'APPROVED', afterMs: 2 * HOUR },
      { status: 'SIGNED', afterMs: 3 * HOUR },
    ]);
    const ref = `keep-${randomUUID()}`;
    const webhookAt = async (ms: number) => {
      while (bank.createdAt(ref) === undefined) await new Promise((r) => setTimeout(r, 20)); // the create ran
      await env.sleep(ms - (Number(await env.currentTimeMs()) - bank.createdAt(ref)));
      await env.client.workflow
        .getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref))
        .signal(financeApplicationStatusChangedSignal, { financeApplicationId: `fa-${ref}` });
    };
    const [result] = await run(
      bank.activities,
      [{ merchantId: 'test', merchantReference: ref, settings: { deadlineMs: 4 * HOUR } }],
      async () => {
        await webhookAt(HOUR);
        await webhookAt(2 * HOUR);
      },
    );
    expect(result!.history.map((h) => [h.status, h.source])).toEqual([
      ['CREATED', 'create'],
      ['IN_PROGRESS', 'webhook'],
      ['APPROVED', 'webhook'],
      ['SIGNED', 'poll'],
    ]);
    // Webhooks are live: the poll runs at the slow cap, so the lost webhook's change is found within 15 minutes.
    const signedFound = Date.parse(result!.history[3]!.at) - bank.createdAt(ref);
    expect(signedFound - 3 * HOUR).toBeLessThanOrEqual(15 * MINUTE);
    // The webhook's change at 2 h did not restart the poll at once: no read in the 30 s after that webhook's
    // own (a restarted poll's first read would come 30 s later).
    const reads = bank.readsOf(ref);
    const webhookRead = reads.find((t) => t >= 2 * HOUR)!;
    expect(reads.filter((t) => t > webhookRead && t <= webhookRead + 60_000)).toEqual([]);
  });

  it('stops following an application that never ends at its 30-day deadline', async () => {
    const bank = fakeBank([{ status: 'IN_PROGRESS', afterMs: HOUR }]);
    const ref = `deadline-${randomUUID()}`;
    const [result] = await run(bank.activities, [
      {
        merchantId: 'test',
        merchantReference: ref,
        settings: { fastPollIntervalMs: DAY, slowPollIntervalMs: DAY, noWebhookPollIntervalMs: DAY },
      },
    ]);
    expect(result).toMatchObject({ done: true, outcome: 'deadline', status: 'IN_PROGRESS' });
    // The deadline is 30 days after the start (the first status is recorded just after it).
    const deadlineAfterCreation = Date.parse(result!.deadlineAt) - Date.parse(result!.history[0]!.at);
    expect(deadlineAfterCreation).toBeLessThanOrEqual(30 * DAY);
    expect(deadlineAfterCreation).toBeGreaterThan(30 * DAY - HOUR);
    expect(bank.readsOf(ref).length).toBeGreaterThanOrEqual(28);
  });

  it('an application the bank forgot: UNKNOWN_AT_BANK, slow polling, and an end after a day of 404s', async () => {
    const forgetAfter = 2 * HOUR;
    const bank = fakeBank([{ status: 'IN_PROGRESS', afterMs: HOUR }], { forgetAfterMs: forgetAfter });
    const ref = `forgotten-${randomUUID()}`;
    const [result] = await run(bank.activities, [{ merchantId: 'test', merchantReference: ref }]);
    expect(result).toMatchObject({
      done: true,
      outcome: 'unknown_at_bank',
      status: 'IN_PROGRESS', // the last status the bank reported
      unknownAtBank: { reads: expect.any(Number) },
    });
    const since = Date.parse(result!.unknownAtBank!.since) - bank.createdAt(ref);
    expect(since).toBeGreaterThanOrEqual(forgetAfter);
    const reads = bank.readsOf(ref);
    const notFound = reads.filter((t) => t >= forgetAfter);
    expect(notFound.length).toBe(result!.unknownAtBank!.reads);
    // A day of 404s, then no more reads: far from the 30-day deadline.
    expect(notFound.at(-1)! - since).toBeGreaterThanOrEqual(DAY);
    expect(notFound.at(-1)! - since).toBeLessThanOrEqual(DAY + HOUR);
    // Polling slowed to the safety net: at most one read per 15 minutes (the slow interval) over that day.
    expect(notFound.length).toBeGreaterThanOrEqual(3);
    expect(notFound.length).toBeLessThanOrEqual(DAY / (15 * MINUTE) + 1);
  });
});
