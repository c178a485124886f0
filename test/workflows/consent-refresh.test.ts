import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../src/activities/types';
import {
  awaitConsentRefreshResult,
  consentRefreshHandle,
  getConsentRefreshProgress,
  startConsentRefresh,
} from '../../src/client/consent-refresh';
import type { AccountEventBody } from '../../src/shared/bank-wire';
import { accountEventSignal, lateAccountEventsQuery, REFRESH_NOT_STARTED } from '../../src/shared/consent-refresh';
import { lateAccountEventsWorkflowId } from '../../src/shared/ids';
import { ConsentId, RefreshTaskId } from '../../src/shared/search-attributes';
import { recordConsentHistory } from '../helpers/histories';
import { connectTestTemporal, eventually, startTestWorker, type TemporalTestContext } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/**
 * consentRefreshWorkflow's logic on the real dev server, with typed jest.fn activities standing in for the bank
 * (the bank itself is exercised in consent-refresh.integration.test.ts).
 */

type StartRefresh = Activities['startRefresh'];
const startRefresh = jest.fn<ReturnType<StartRefresh>, Parameters<StartRefresh>>();
const notUsed = () => Promise.reject(new Error('not used in these tests'));
const activities: Activities = {
  startRefresh,
  createApplication: notUsed,
  getApplicationStatus: notUsed,
  pollApplicationStatus: notUsed,
  notifyMerchant: notUsed,
  checkCallbackUrl: notUsed,
  readClock: () => Promise.resolve({ nowMs: Date.now() }),
  readUndeliveredCallbacks: notUsed,
};

const bankEvent = (consentId: string, taskId: string, bankCode: string, taskStatus = 'FINISHED'): AccountEventBody => ({
  consentId,
  taskId,
  taskStatus,
  bankCode,
  bankName: `Bank ${bankCode}`,
  accounts: [{ accountId: `${bankCode}-1`, eventType: 'ADDED' }],
});

describe('consentRefreshWorkflow (workflow logic, dev server, jest.fn activities)', () => {
  let t: TemporalTestContext;
  let worker: Awaited<ReturnType<typeof startTestWorker>> | undefined;

  // Every workflow: a refresh starts the consent's lateAccountEventsWorkflow for the events it cannot take.
  const startWorker = () => startTestWorker(t, { workflowsPath: require.resolve('../../src/workflows'), activities });
  beforeAll(async () => {
    t = await connectTestTemporal();
    worker = await startWorker();
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
  });
  beforeEach(() => startRefresh.mockReset());

  const start = (consentId: string, extra: Record<string, unknown> = {}) =>
    startConsentRefresh(t.client, TEST_MERCHANT, { consentId, timeout: '60s', ...extra }, { taskQueue: t.taskQueue });
  const lateReports = async (consentId: string) =>
    (
      await t.client.workflow
        .getHandle(lateAccountEventsWorkflowId(TEST_MERCHANT, consentId))
        .query(lateAccountEventsQuery)
    ).reports;
  const terminateLate = (consentId: string) =>
    t.client.workflow
      .getHandle(lateAccountEventsWorkflowId(TEST_MERCHANT, consentId))
      .terminate('test done')
      .catch(() => undefined);

  it('keeps an event that came before PUT /refresh answered, ignores duplicates, hands stale ones off, records a failed bank', async () => {
    const consentId = `c-${randomUUID()}`;
    const taskId = `task-${randomUUID()}`;
    let answer!: (value: { taskId: string }) => void;
    startRefresh.mockImplementation(() => new Promise((resolve) => (answer = resolve)));

    const started = start(consentId, { expectedBankCodes: ['AAA', 'BBB', 'CCC'] });
    await eventually(() => (startRefresh.mock.calls.length === 1 ? true : undefined));
    const handle = consentRefreshHandle(t.client, consentId);
    // While PUT /refresh is still open: one event of this task (matched later) and one of an older task.
    await handle.signal(accountEventSignal, bankEvent(consentId, taskId, 'AAA'));
    await handle.signal(accountEventSignal, bankEvent(consentId, 'an-earlier-task', 'BBB'));
    expect((await getConsentRefreshProgress(t.client, TEST_MERCHANT, consentId)).taskId).toBeUndefined();
    answer({ taskId });

    expect(await started).toEqual({ consentId, workflowId: handle.workflowId, taskId });
    await handle.signal(accountEventSignal, bankEvent(consentId, taskId, 'AAA'));
    await handle.signal(accountEventSignal, bankEvent(consentId, taskId, 'BBB', 'FAILED'));
    await handle.signal(accountEventSignal, bankEvent(consentId, taskId, 'CCC'));

    const result = await awaitConsentRefreshResult(t.client, TEST_MERCHANT, consentId);
    expect(result).toMatchObject({
      consentId,
      taskId,
      done: true,
      endedBy: 'all-reported',
      missing: [],
      staleEvents: 1,
      duplicateEvents: 1,
      handedOffEvents: 1,
      lateReports: 0,
    });
    // The earlier task's event (it came while PUT /refresh was open, so the receiver could not tell) is a late report.
    expect((await lateReports(consentId)).map((r) => [r.taskId, r.bankCode, r.reason])).toEqual([
      ['an-earlier-task', 'BBB', 'other-task'],
    ]);
    // Recorded under LATE_REPORTS_PER_MERCHANT_PATCH (its v2- recording, from before it, stays committed).
    await recordConsentHistory('consent-refresh-v5-early-event-of-another-task', handle);
    await terminateLate(consentId);
    expect(result.banks.map((b) => [b.bankCode, b.taskStatus, b.succeeded])).toEqual([
      ['AAA', 'FINISHED', true],
      ['BBB', 'FAILED', false],
      ['CCC', 'FINISHED', true],
    ]);
    expect(result.banks[0]).toMatchObject({
      bankName: 'Bank AAA',
      accounts: [{ accountId: 'AAA-1', eventType: 'ADDED' }],
    });
    expect(typeof result.banks[0]!.at).toBe('string');
    expect(startRefresh).toHaveBeenCalledTimes(1);
    expect(startRefresh).toHaveBeenCalledWith({ consentId });

    // Tracing: search attributes and static summary, read from the execution itself.
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(ConsentId)).toBe(consentId);
    expect(description.typedSearchAttributes.get(RefreshTaskId)).toBe(taskId);
    expect(await description.staticSummary()).toContain(consentId);
  });

  it('without expected banks, ends after the quiet period that follows the last bank', async () => {
    const consentId = `c-${randomUUID()}`;
    startRefresh.mockResolvedValue({ taskId: 'task-q' });
    await start(consentId, { quietPeriod: '1s' });
    const handle = consentRefreshHandle(t.client, consentId);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-q', 'AAA'));
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-q', 'BBB'));

    const result = await handle.result();
    expect(result.endedBy).toBe('quiet-period');
    expect(result.banks.map((b) => b.bankCode)).toEqual(['AAA', 'BBB']);
    expect(result.missing).toEqual([]);
  });

  it('ends at the timeout with the banks that answered and the missing ones', async () => {
    const consentId = `c-${randomUUID()}`;
    startRefresh.mockResolvedValue({ taskId: 'task-t' });
    await start(consentId, { expectedBankCodes: ['AAA', 'BBB'], timeout: '2s' });
    const handle = consentRefreshHandle(t.client, consentId);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-t', 'AAA'));

    const result = await handle.result();
    expect(result).toMatchObject({ endedBy: 'timeout', missing: ['BBB'], staleEvents: 0 });
    expect(result.banks.map((b) => b.bankCode)).toEqual(['AAA']);
  });

  it('attaches a second caller to the running refresh (one PUT /refresh), and starts a new run after it closed', async () => {
    const consentId = `c-${randomUUID()}`;
    let n = 0;
    startRefresh.mockImplementation(() => Promise.resolve({ taskId: `task-${++n}` }));

    const [first, second] = await Promise.all([
      start(consentId, { expectedBankCodes: ['AAA'] }),
      start(consentId, { expectedBankCodes: ['AAA'] }),
    ]);
    expect(first.taskId).toBe('task-1');
    expect(second.taskId).toBe('task-1');
    expect(startRefresh).toHaveBeenCalledTimes(1);

    const handle = consentRefreshHandle(t.client, consentId);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-1', 'AAA'));
    expect((await handle.result()).endedBy).toBe('all-reported');

    const again = await start(consentId, { expectedBankCodes: ['AAA'] });
    expect(again.taskId).toBe('task-2');
    expect(startRefresh).toHaveBeenCalledTimes(2);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-1', 'AAA')); // the old task's: stale now
    expect((await getConsentRefreshProgress(t.client, TEST_MERCHANT, consentId)).staleEvents).toBe(1);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-2', 'AAA'));
    const result = await awaitConsentRefreshResult(t.client, TEST_MERCHANT, consentId);
    expect(result).toMatchObject({ taskId: 'task-2', staleEvents: 1, handedOffEvents: 1, endedBy: 'all-reported' });
    // Learned from the first run, but the merchant's expectedBankCodes override it.
    expect(result.knownBankCodes).toEqual(['AAA']);
    expect((await lateReports(consentId)).map((r) => [r.taskId, r.bankCode])).toEqual([['task-1', 'AAA']]);
    await terminateLate(consentId);
  });

  it('without expected banks, does not let the quiet period end it while a learned bank is missing', async () => {
    const consentId = `c-${randomUUID()}`;
    startRefresh.mockResolvedValue({ taskId: 'task-k' });
    await start(consentId, { knownBankCodes: ['AAA', 'BBB'], quietPeriod: '300ms', timeout: '3s' });
    const handle = consentRefreshHandle(t.client, consentId);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-k', 'AAA'));

    // A quiet period of 300 ms after AAA would have ended it; BBB, learned, keeps it open until the timeout.
    const result = await handle.result();
    expect(result).toMatchObject({ endedBy: 'timeout', missing: ['BBB'], knownBankCodes: ['AAA', 'BBB'] });
    expect(result.banks.map((b) => b.bankCode)).toEqual(['AAA']);
    await recordConsentHistory('consent-refresh-v5-learned-bank-missing', handle);
  });

  it('with every learned bank in, ends by the quiet period after the last one', async () => {
    const consentId = `c-${randomUUID()}`;
    startRefresh.mockResolvedValue({ taskId: 'task-k2' });
    await start(consentId, { knownBankCodes: ['AAA', 'BBB'], quietPeriod: '300ms', timeout: '60s' });
    const handle = consentRefreshHandle(t.client, consentId);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-k2', 'BBB'));
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-k2', 'AAA'));
    const result = await handle.result();
    expect(result).toMatchObject({ endedBy: 'quiet-period', missing: [] });
    expect(result.banks.map((b) => b.bankCode)).toEqual(['BBB', 'AAA']);
  });

  it('restarts the quiet period when its timer fired during an outage, so a bank answering after it is taken', async () => {
    const consentId = `c-${randomUUID()}`;
    startRefresh.mockResolvedValue({ taskId: 'task-o' });
    await start(consentId, { quietPeriod: '2s', timeout: '5m' });
    const handle = consentRefreshHandle(t.client, consentId);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-o', 'AAA'));
    const quietTimers = async () =>
      ((await handle.fetchHistory()).events ?? []).filter(
        (e) => Number(e.timerStartedEventAttributes?.startToFireTimeout?.seconds ?? 99) <= 2,
      );
    await eventually(async () => ((await quietTimers()).length === 1 ? true : undefined));

    // The workers go down; the quiet-period timer fires meanwhile; they come back well after it was due.
    await worker?.stop();
    worker = undefined;
    const fired = await eventually(async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.find((e) => e.timerFiredEventAttributes);
    });
    const firedAt = Number(fired.eventTime!.seconds) * 1000;
    await eventually(() => (Date.now() > firedAt + 4_000 ? true : undefined), 20_000);
    worker = await startWorker();

    // It did not close: a second quiet period started. The bank's retry lands now.
    await eventually(async () => ((await quietTimers()).length === 2 ? true : undefined));
    expect((await getConsentRefreshProgress(t.client, TEST_MERCHANT, consentId)).done).toBe(false);
    await handle.signal(accountEventSignal, bankEvent(consentId, 'task-o', 'BBB'));
    const result = await handle.result();
    expect(result).toMatchObject({ endedBy: 'quiet-period', missing: [] });
    expect(result.banks.map((b) => b.bankCode)).toEqual(['AAA', 'BBB']);
    // The lateness was read from the worker's clock by a recorded local activity (RECORDED_CLOCK_PATCH), so a
    // query on the closed run, which replays its whole history, agrees with what the run did.
    const markers = ((await handle.fetchHistory()).events ?? []).filter((e) => e.markerRecordedEventAttributes);
    expect(markers.length).toBeGreaterThanOrEqual(2); // the patches and the clock reading
    expect(await getConsentRefreshProgress(t.client, TEST_MERCHANT, consentId)).toMatchObject({
      done: true,
      endedBy: 'quiet-period',
    });
    await recordConsentHistory('consent-refresh-v5-quiet-period-after-outage', handle);
  });

  it('fails the refresh (and every attached caller) with RefreshNotStarted when the bank refuses PUT /refresh', async () => {
    const consentId = `c-${randomUUID()}`;
    startRefresh.mockRejectedValue(ApplicationFailure.nonRetryable('consent unknown to the bank', 'BankRejected'));

    const err: unknown = await start(consentId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(((err as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe(REFRESH_NOT_STARTED);

    const handle = consentRefreshHandle(t.client, consentId);
    const failed: unknown = await handle.result().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    expect(((failed as WorkflowFailedError).cause as ApplicationFailure).type).toBe(REFRESH_NOT_STARTED);
    const progress = await getConsentRefreshProgress(t.client, TEST_MERCHANT, consentId);
    expect(progress.done).toBe(true);
    expect(progress.taskId).toBeUndefined();
    expect(progress.error).toContain('consent unknown to the bank');
  });
});
