import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../src/activities/types';
import type { WorkflowHandle } from '@temporalio/client';
import {
  MAX_ACCOUNTS_PER_BATCH,
  transactionEventSignal,
  transactionEventsStateQuery,
  type TransactionEventsInput,
  type TransactionEventSignalInput,
  type TransactionsChangedEvent,
} from '../../src/shared/transaction-events';
import { transactionEventsWorkflowId } from '../../src/shared/ids';
import { recordConsentHistory } from '../helpers/histories';
import type { transactionEventsWorkflow } from '../../src/workflows/transaction-events/workflow';
import {
  connectTestTemporal,
  eventually,
  startTestWorker,
  testPayloadCodec,
  type TemporalTestContext,
} from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/**
 * transactionEventsWorkflow's logic on the real dev server with a typed jest.fn notifyMerchant (the real HTTP
 * path, receiver → Temporal → merchant callback, is in transaction-events.integration.test.ts).
 */

type NotifyMerchant = Activities['notifyMerchant'];
const notifyMerchant = jest.fn<ReturnType<NotifyMerchant>, Parameters<NotifyMerchant>>();
const notUsed = () => Promise.reject(new Error('not used in these tests'));
const activities: Activities = {
  notifyMerchant,
  startRefresh: notUsed,
  createApplication: notUsed,
  getApplicationStatus: notUsed,
  pollApplicationStatus: notUsed,
  checkCallbackUrl: notUsed,
  readClock: notUsed,
  readUndeliveredCallbacks: notUsed,
};

describe('transactionEventsWorkflow (workflow logic, dev server, jest.fn activities)', () => {
  let t: TemporalTestContext;
  let worker: Awaited<ReturnType<typeof startTestWorker>> | undefined;

  beforeAll(async () => {
    t = await connectTestTemporal();
    worker = await startTestWorker(t, {
      workflowsPath: require.resolve('../../src/workflows/transaction-events/workflow'),
      activities,
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
  });
  beforeEach(() => notifyMerchant.mockReset());

  const signalWithStart = (input: TransactionEventsInput, event: TransactionEventSignalInput) =>
    t.client.workflow.signalWithStart<typeof transactionEventsWorkflow, [TransactionEventSignalInput]>(
      'transactionEventsWorkflow',
      {
        workflowId: transactionEventsWorkflowId(TEST_MERCHANT, input.consentId),
        taskQueue: t.taskQueue,
        args: [input],
        signal: transactionEventSignal,
        signalArgs: [event],
      },
    );
  const callsFor = (consentId: string) =>
    notifyMerchant.mock.calls
      .map(([c]) => c)
      .filter((c) => (c.event as unknown as TransactionsChangedEvent).consentId === consentId);

  it('coalesces a burst into one merchant call with the union of the accounts, then closes when idle', async () => {
    const consentId = `c-${randomUUID()}`;
    notifyMerchant.mockResolvedValue({ delivered: true, status: 204 });
    const input = {
      merchantId: 'test',
      consentId,
      callbackUrl: 'http://merchant.test/tx',
      coalesceWindow: '1s',
      idleTimeout: '1s',
    } as const;
    for (let i = 0; i < 20; i++) {
      await signalWithStart(input, { consentId, eventType: 'NEW', accounts: [{ accountId: `acc-${i % 7}` }] });
    }
    const state = await t.client.workflow
      .getHandle<typeof transactionEventsWorkflow>(transactionEventsWorkflowId(TEST_MERCHANT, consentId))
      .result();
    expect(state).toMatchObject({ consentId, events: 20, batches: 1, pendingAccountIds: [] });

    const calls = callsFor(consentId);
    expect(calls).toHaveLength(1);
    const event = calls[0]!.event as unknown as TransactionsChangedEvent;
    expect(event).toMatchObject({ type: 'transactionsChanged', consentId, eventType: 'NEW', events: 20, batch: 1 });
    expect(event.accounts.map((a) => a.accountId).sort()).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `acc-${i}`));
    expect(calls[0]!.url).toBe('http://merchant.test/tx');
    expect(calls[0]!.idempotencyKey).toMatch(
      new RegExp(`^${transactionEventsWorkflowId(TEST_MERCHANT, consentId)}:.+:1$`),
    );
  });

  it('continues as new at the batch threshold, carrying counts, with a distinct idempotency key per batch', async () => {
    const consentId = `c-${randomUUID()}`;
    notifyMerchant.mockResolvedValue({ delivered: true, status: 200 });
    const input = {
      merchantId: 'test',
      consentId,
      callbackUrl: 'http://merchant.test/tx',
      coalesceWindow: '200ms',
      idleTimeout: '2s',
      maxBatchesPerRun: 1,
    } as const;
    const first = await signalWithStart(input, { consentId, accounts: [{ accountId: 'a' }] });
    await eventually(() => (callsFor(consentId).length === 1 ? true : undefined));
    // Lands in the next run (after continue-as-new) or in the first run's pending set: either way delivered once.
    await signalWithStart(input, { consentId, accounts: [{ accountId: 'b' }] });
    await eventually(() => (callsFor(consentId).length === 2 ? true : undefined));

    const latest = t.client.workflow.getHandle(transactionEventsWorkflowId(TEST_MERCHANT, consentId));
    const state = await latest.query(transactionEventsStateQuery);
    expect(state).toMatchObject({ events: 2, batches: 2 });
    expect((await latest.describe()).runId).not.toBe(first.signaledRunId);

    const calls = callsFor(consentId);
    expect(
      calls.flatMap((c) => (c.event as unknown as TransactionsChangedEvent).accounts.map((a) => a.accountId)),
    ).toEqual(['a', 'b']);
    expect(new Set(calls.map((c) => c.idempotencyKey)).size).toBe(2);
    await t.client.workflow.getHandle(transactionEventsWorkflowId(TEST_MERCHANT, consentId)).terminate('test done');
  });

  it('delivers a backlog in batches of at most 1,000 accounts, and continues as new carrying at most one batch', async () => {
    const consentId = `c-${randomUUID()}`;
    notifyMerchant.mockResolvedValue({ delivered: true, status: 200 });
    const input = {
      merchantId: 'test',
      consentId,
      callbackUrl: 'http://merchant.test/tx',
      coalesceWindow: '300ms',
      idleTimeout: '2s',
      maxBatchesPerRun: 1,
    } as const;
    const all = Array.from({ length: 3_500 }, (_, i) => `acc-${String(i).padStart(4, '0')}`);
    // As the receiver signals a big transactionEvent: parts of at most MAX_ACCOUNTS_PER_BATCH.
    for (let from = 0; from < all.length; from += MAX_ACCOUNTS_PER_BATCH) {
      const accounts = all.slice(from, from + MAX_ACCOUNTS_PER_BATCH).map((accountId) => ({ accountId }));
      await signalWithStart(input, { consentId, accounts });
    }
    const delivered = await eventually(() => {
      const ids = callsFor(consentId).flatMap((c) =>
        (c.event as unknown as TransactionsChangedEvent).accounts.map((a) => a.accountId),
      );
      return ids.length >= all.length ? ids : undefined;
    });
    expect(delivered.sort()).toEqual(all);
    const sizes = callsFor(consentId).map((c) => (c.event as unknown as TransactionsChangedEvent).accounts.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_ACCOUNTS_PER_BATCH);
    expect(sizes.length).toBeGreaterThanOrEqual(4);
    expect(new Set(callsFor(consentId).map((c) => c.idempotencyKey)).size).toBe(sizes.length);

    // Every run after the first started from a snapshot of at most one batch.
    const workflowId = transactionEventsWorkflowId(TEST_MERCHANT, consentId);
    const carried: number[] = [];
    let first = '';
    let runId: string | undefined = (await t.client.workflow.getHandle(workflowId).describe()).runId;
    while (runId) {
      first = runId;
      const history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> = await t.client.workflow
        .getHandle(workflowId, runId)
        .fetchHistory();
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      const [payload] = await testPayloadCodec.decode(started?.input?.payloads ?? []);
      const arg = JSON.parse(Buffer.from(payload!.data!).toString('utf8')) as TransactionEventsInput;
      if (arg.carried) carried.push(arg.carried.pendingAccountIds.length);
      runId = started?.continuedExecutionRunId || undefined;
    }
    expect(carried.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...carried)).toBeLessThanOrEqual(MAX_ACCOUNTS_PER_BATCH);
    // The first run (BOUNDED_BATCHES_PATCH: batches back to back, then continue-as-new) for the replay test.
    await recordConsentHistory('transaction-events-v5-bounded-batches', t.client.workflow.getHandle(workflowId, first));
    await t.client.workflow
      .getHandle(workflowId)
      .terminate('test done')
      .catch(() => undefined);
  });

  it('keeps serving later bursts after the merchant refused a batch', async () => {
    const consentId = `c-${randomUUID()}`;
    notifyMerchant
      .mockRejectedValueOnce(ApplicationFailure.nonRetryable('merchant answered HTTP 400', 'MerchantCallbackRejected'))
      .mockResolvedValue({ delivered: true, status: 200 });
    const input = {
      merchantId: 'test',
      consentId,
      callbackUrl: 'http://merchant.test/tx',
      coalesceWindow: '200ms',
      idleTimeout: '2s',
    } as const;
    await signalWithStart(input, { consentId, accounts: [{ accountId: 'refused' }] });
    await eventually(() => (callsFor(consentId).length === 1 ? true : undefined));
    const handle = await signalWithStart(input, { consentId, accounts: [{ accountId: 'later' }] });

    const state = await handle.result();
    expect(state).toMatchObject({ events: 2, batches: 2 });
    expect(callsFor(consentId)).toHaveLength(2);
  });
});
