/**
 * The workflow's logic on the real dev server with typed jest.fn activities (the bank is scripted in memory).
 * The sandbox-over-HTTP versions of these behaviours are in test/api/finance-application*.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import type { Activities } from '../../src/activities/types';
import type { ApplicationStatusResponse } from '../../src/shared/bank-wire';
import {
  awaitFinanceApplication,
  financeApplicationHandle,
  getFinanceApplication,
  startFinanceApplication,
  type FinanceApplicationSettings,
} from '../../src/client/finance-applications';
import { BankFailureType } from '../../src/shared/failure-types';
import {
  FinanceApplicationFailureType,
  financeApplicationStateQuery,
  financeApplicationStatusChangedSignal,
} from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { FinanceApplicationStatus } from '../../src/shared/search-attributes';
import {
  bundleWorkflows,
  connectTestTemporal,
  eventually,
  withWorker,
  type TemporalTestContext,
} from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/**
 * An in-memory bank: one status per application id, changed by the test. Creation and merchant callbacks are
 * typed jest.fn activities; status reads and polls are the real activities over a fake bank client, so the
 * polling activity's retries run on the real server.
 */
function fakeBank() {
  const statuses = new Map<string, string>();
  let next = 0;
  const bankReads = jest.fn<Promise<ApplicationStatusResponse>, [string]>((financeApplicationId) =>
    Promise.resolve({ status: statuses.get(financeApplicationId) ?? 'CREATED' }),
  );
  const real = createActivities({
    bank: {
      createApplication: () => Promise.reject(new Error('not used')),
      getApplicationStatus: (id: string) => bankReads(id),
      startRefresh: () => Promise.reject(new Error('not used')),
    },
    webhooks: { publicBaseUrl: 'http://127.0.0.1:1', hashSecret: 'test-webhook-hash-secret-0123456789abcdef' },
    // The real checkCallbackUrl: the merchant endpoint of these tests is on the worker's allow-list.
    callbacks: { allowList: { origins: ['https://merchant.example'], loopback: false }, signingSecrets: [] },
  });
  const activities = {
    ...real,
    createApplication: jest.fn<
      ReturnType<Activities['createApplication']>,
      Parameters<Activities['createApplication']>
    >(() => {
      const id = `fa-${++next}-${randomUUID()}`;
      statuses.set(id, 'CREATED');
      return Promise.resolve({ financeApplicationId: id, status: 'CREATED', extra: 'kept' });
    }),
    getApplicationStatus: jest.fn(real.getApplicationStatus),
    startRefresh: jest.fn<ReturnType<Activities['startRefresh']>, Parameters<Activities['startRefresh']>>(),
    notifyMerchant: jest.fn<ReturnType<Activities['notifyMerchant']>, Parameters<Activities['notifyMerchant']>>(() =>
      Promise.resolve({ delivered: true, status: 204 }),
    ),
  } satisfies Activities;
  return { activities, statuses, bankReads };
}

/** Webhooks alone drive reads in these tests unless one sets a short fast poll. */
const WEBHOOK_DRIVEN: FinanceApplicationSettings = { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 };

describe('financeApplicationWorkflow (workflow logic, jest.fn activities)', () => {
  let t: TemporalTestContext;
  let workflowBundle: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    t = await connectTestTemporal();
    workflowBundle = await bundleWorkflows(require.resolve('../../src/workflows'));
  });
  afterAll(async () => t.close());

  const run = <T>(activities: Activities, fn: () => Promise<T>) =>
    withWorker({ connection: t.nativeConnection, taskQueue: t.taskQueue, workflowBundle, activities }, fn);
  const start = (
    merchantReference: string,
    settings: FinanceApplicationSettings = WEBHOOK_DRIVEN,
    callbackUrl?: string,
  ) =>
    startFinanceApplication(
      t.client,
      TEST_MERCHANT,
      {
        merchantReference,
        application: { redirectUrl: 'https://shop.example/back', basket: 42 },
        settings,
        callbackUrl,
      },
      { taskQueue: t.taskQueue },
    );

  it('starts once per reference, records forward-only statuses once, coalesces bursts, ignores foreign ids', async () => {
    const { activities, statuses } = fakeBank();
    const ref = `wf-${randomUUID()}`;
    await run(activities, async () => {
      const [first, second] = await Promise.all([start(ref), start(ref)]);
      expect(second.financeApplicationId).toBe(first.financeApplicationId);
      expect([first.created, second.created].sort()).toEqual([false, true]);
      expect(first.bank).toMatchObject({ financeApplicationId: first.financeApplicationId, extra: 'kept' });
      expect(activities.createApplication).toHaveBeenCalledTimes(1);
      expect(activities.createApplication.mock.calls[0]![0]).toEqual({
        merchantId: TEST_MERCHANT,
        merchantReference: ref,
        application: { redirectUrl: 'https://shop.example/back', basket: 42, merchantReference: ref },
      });
      const id = first.financeApplicationId;
      const handle = financeApplicationHandle(t.client, TEST_MERCHANT, ref);
      const signal = (financeApplicationId = id) =>
        handle.signal(financeApplicationStatusChangedSignal, { financeApplicationId });

      statuses.set(id, 'IN_PROGRESS');
      await signal();
      await eventually(async () =>
        (await getFinanceApplication(t.client, TEST_MERCHANT, ref)).status === 'IN_PROGRESS' ? true : undefined,
      );

      // A burst of 20 webhooks for one change: far fewer reads than webhooks, one recorded status.
      statuses.set(id, 'APPROVED');
      const readsBefore = activities.getApplicationStatus.mock.calls.length;
      await Promise.all(Array.from({ length: 20 }, () => signal()));
      await eventually(async () =>
        (await getFinanceApplication(t.client, TEST_MERCHANT, ref)).status === 'APPROVED' ? true : undefined,
      );
      await eventually(async () =>
        (await handle.query(financeApplicationStateQuery)).webhooksReceived === 21 ? true : undefined,
      );
      expect(activities.getApplicationStatus.mock.calls.length - readsBefore).toBeLessThan(20);

      // A stale read (the bank answers an older status) is not a regression; a foreign id triggers no read of ours,
      // only one read of that id to confirm it (this bank knows every id: a duplicate, reported once).
      statuses.set(id, 'IN_PROGRESS');
      const readsBeforeStale = activities.getApplicationStatus.mock.calls.length;
      await signal();
      const readsAfterStale = await eventually(async () => {
        const s = await handle.query(financeApplicationStateQuery);
        const calls = activities.getApplicationStatus.mock.calls.length;
        return s.webhooksReceived === 22 && calls > readsBeforeStale && s.statusReads === calls
          ? s.statusReads
          : undefined;
      });
      await signal('someone-elses-application');
      await eventually(async () => {
        const s = await handle.query(financeApplicationStateQuery);
        return s.mismatchedWebhooks === 1 && s.otherIds?.reads === 1 ? true : undefined;
      });
      expect(
        activities.getApplicationStatus.mock.calls
          .slice(readsAfterStale)
          .map(([c]) => [c.financeApplicationId, c.source]),
      ).toEqual([['someone-elses-application', undefined]]);
      expect((await handle.query(financeApplicationStateQuery)).statusReads).toBe(readsAfterStale);

      statuses.set(id, 'COMPLETED');
      await signal();
      const final = await awaitFinanceApplication(t.client, TEST_MERCHANT, ref);
      expect(final.history.map((h) => [h.status, h.source])).toEqual([
        ['CREATED', 'create'],
        ['IN_PROGRESS', 'webhook'],
        ['APPROVED', 'webhook'],
        ['COMPLETED', 'webhook'],
      ]);
      expect(final).toMatchObject({
        done: true,
        outcome: 'terminal',
        status: 'COMPLETED',
        webhooksLive: true,
        mismatchedWebhooks: 1,
        duplicateApplicationIds: ['someone-elses-application'],
      });
      const described = await handle.describe();
      expect(described.typedSearchAttributes.get(FinanceApplicationStatus)).toBe('COMPLETED');
      expect(await described.staticSummary()).toBe(`Finance application ${ref}`);

      // After completion the same reference returns the same application, still without a second POST.
      const again = await start(ref);
      expect(again).toMatchObject({ financeApplicationId: id, created: false });
      expect(activities.createApplication).toHaveBeenCalledTimes(1);
    });
  });

  it('polls without webhooks, ends at the deadline, and pushes each change to the merchant once', async () => {
    const { activities, statuses } = fakeBank();
    // The bank moves the application on as soon as it has answered the create: the first poll finds it, however
    // late a loaded machine runs it before the deadline.
    const create = activities.createApplication.getMockImplementation()!;
    activities.createApplication.mockImplementationOnce(async (...args) => {
      const created = await create(...args);
      statuses.set(created.financeApplicationId, 'IN_PROGRESS');
      return created;
    });
    const ref = `wf-poll-${randomUUID()}`;
    await run(activities, async () => {
      await start(
        ref,
        { fastPollIntervalMs: 50, slowPollIntervalMs: 50, deadlineMs: 3_000 },
        'https://merchant.example/hooks?token=secret',
      );
      const final = await awaitFinanceApplication(t.client, TEST_MERCHANT, ref);
      expect(final).toMatchObject({ done: true, outcome: 'deadline', status: 'IN_PROGRESS', webhooksLive: false });
      expect(final.history.map((h) => [h.status, h.source])).toEqual([
        ['CREATED', 'create'],
        ['IN_PROGRESS', 'poll'],
      ]);
      expect(activities.notifyMerchant.mock.calls.map(([c]) => [c.idempotencyKey, c.event.status])).toEqual([
        [`${financeApplicationWorkflowId(TEST_MERCHANT, ref)}:CREATED`, 'CREATED'],
        [`${financeApplicationWorkflowId(TEST_MERCHANT, ref)}:IN_PROGRESS`, 'IN_PROGRESS'],
      ]);
      expect(final.notificationsSent).toBe(2);
    });
  });

  it('continues as new when forced, carrying history and every signal', async () => {
    const { activities, statuses } = fakeBank();
    const ref = `wf-can-${randomUUID()}`;
    await run(activities, async () => {
      const { financeApplicationId: id } = await start(ref, { ...WEBHOOK_DRIVEN, continueAsNewAfterEvents: 20 });
      const handle = financeApplicationHandle(t.client, TEST_MERCHANT, ref);
      const firstRunId = (await handle.describe()).runId;
      const order = ['IN_PROGRESS', 'APPROVED', 'SIGNED'];
      let sent = 0;
      for (const status of order) {
        statuses.set(id, status);
        // Several webhooks per change, some while the workflow is continuing as new.
        for (let i = 0; i < 4; i++, sent++)
          await handle.signal(financeApplicationStatusChangedSignal, { financeApplicationId: id });
        await eventually(async () =>
          (await handle.query(financeApplicationStateQuery)).status === status ? true : undefined,
        );
      }
      statuses.set(id, 'COMPLETED');
      await handle.signal(financeApplicationStatusChangedSignal, { financeApplicationId: id });
      sent++;
      const final = await awaitFinanceApplication(t.client, TEST_MERCHANT, ref);
      expect(final.runs).toBeGreaterThan(1);
      expect((await handle.describe()).runId).not.toBe(firstRunId);
      expect(final.webhooksReceived).toBe(sent);
      expect(final.history.map((h) => h.status)).toEqual(['CREATED', ...order, 'COMPLETED']);
    });
  });

  it('fails the update and the workflow with a typed failure when the bank refuses the application', async () => {
    const { activities } = fakeBank();
    activities.createApplication.mockRejectedValueOnce(
      ApplicationFailure.create({
        type: BankFailureType.Rejected,
        message: 'redirectUrl not allowed',
        nonRetryable: true,
      }),
    );
    const ref = `wf-rejected-${randomUUID()}`;
    await run(activities, async () => {
      const err: unknown = await start(ref).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause).toMatchObject({
        type: FinanceApplicationFailureType.CreateRejected,
      });
      const result: unknown = await awaitFinanceApplication(t.client, TEST_MERCHANT, ref).catch((e: unknown) => e);
      expect(result).toBeInstanceOf(WorkflowFailedError);
      expect((result as WorkflowFailedError).cause).toMatchObject({
        type: FinanceApplicationFailureType.CreateRejected,
      });

      // A failed creation may be tried again with the same reference: a new run, a new application.
      const retried = await start(ref);
      expect(retried.created).toBe(true);
      expect(activities.createApplication).toHaveBeenCalledTimes(2);
      await t.client.workflow.getHandle(retried.workflowId).terminate('test done');
    });
  });

  it('refuses a callback URL outside the worker’s allow-list before the bank is called, failing update and run', async () => {
    const { activities } = fakeBank();
    const ref = `wf-callback-${randomUUID()}`;
    await run(activities, async () => {
      const err: unknown = await start(ref, WEBHOOK_DRIVEN, 'https://evil.example/steal?token=t').catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = (err as WorkflowUpdateFailedError).cause as ApplicationFailure;
      expect(cause).toMatchObject({ type: FinanceApplicationFailureType.CallbackUrlNotAllowed, nonRetryable: true });
      expect(cause.message).toContain('callback origin https://evil.example is not in CALLBACK_ALLOWED_ORIGINS');
      expect(cause.message).not.toContain('token');
      const result: unknown = await awaitFinanceApplication(t.client, TEST_MERCHANT, ref).catch((e: unknown) => e);
      expect((result as WorkflowFailedError).cause).toMatchObject({
        type: FinanceApplicationFailureType.CallbackUrlNotAllowed,
      });
      expect(activities.createApplication).not.toHaveBeenCalled();

      // Fixed by the merchant: the same reference starts again (the failed run does not block it).
      const retried = await start(ref, WEBHOOK_DRIVEN, 'https://merchant.example/hooks');
      expect(retried.created).toBe(true);
      expect(activities.createApplication).toHaveBeenCalledTimes(1);
      await t.client.workflow.getHandle(retried.workflowId).terminate('test done');
    });
  });
});
