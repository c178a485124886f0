import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../src/activities/types';
import type { AccountEventBody } from '../../src/shared/bank-wire';
import {
  lateAccountEventSignal,
  lateAccountEventsQuery,
  type LateAccountEventSignalInput,
  type LateAccountEventsInput,
  type LateBankReportEvent,
} from '../../src/shared/consent-refresh';
import { lateAccountEventsWorkflowId } from '../../src/shared/ids';
import type { lateAccountEventsWorkflow } from '../../src/workflows/late-account-events/workflow';
import { connectTestTemporal, eventually, startTestWorker, type TemporalTestContext } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/**
 * lateAccountEventsWorkflow's logic on the real dev server with a typed jest.fn notifyMerchant (the real path,
 * bank sandbox → receiver → Temporal → merchant callback, is in consent-refresh.integration.test.ts).
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

const event = (consentId: string, bankCode: string, taskId = 'task-1'): AccountEventBody => ({
  consentId,
  taskId,
  taskStatus: bankCode === 'FAIL' ? 'FAILED' : 'FINISHED',
  bankCode,
  bankName: `${bankCode} Bank`,
  accounts: [{ accountId: `${bankCode}-1`, eventType: 'UPDATED' }],
});

describe('lateAccountEventsWorkflow (workflow logic, dev server, jest.fn activities)', () => {
  let t: TemporalTestContext;
  let worker: Awaited<ReturnType<typeof startTestWorker>> | undefined;

  beforeAll(async () => {
    t = await connectTestTemporal();
    worker = await startTestWorker(t, {
      workflowsPath: require.resolve('../../src/workflows/late-account-events/workflow'),
      activities,
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
  });
  beforeEach(() => notifyMerchant.mockReset());

  const signalWithStart = (input: LateAccountEventsInput, report: LateAccountEventSignalInput) =>
    t.client.workflow.signalWithStart<typeof lateAccountEventsWorkflow, [LateAccountEventSignalInput]>(
      'lateAccountEventsWorkflow',
      {
        workflowId: lateAccountEventsWorkflowId(TEST_MERCHANT, input.consentId),
        taskQueue: t.taskQueue,
        args: [input],
        signal: lateAccountEventSignal,
        signalArgs: [report],
      },
    );
  const query = (consentId: string) =>
    t.client.workflow.getHandle(lateAccountEventsWorkflowId(TEST_MERCHANT, consentId)).query(lateAccountEventsQuery);
  const delivered = (consentId: string) =>
    notifyMerchant.mock.calls
      .map(([call]) => call)
      .filter((call) => (call.event as unknown as LateBankReportEvent).consentId === consentId);

  it('delivers each (taskId, bankCode) once under a stable key, continues as new carrying the reports', async () => {
    const consentId = `late-${randomUUID()}`;
    notifyMerchant.mockResolvedValue({ delivered: true, status: 200 });
    const input = {
      merchantId: 'test',
      consentId,
      callbackUrl: 'https://merchant.example/late',
      maxDeliveriesPerRun: 2,
    };
    const handle = await signalWithStart(input, { event: event(consentId, 'AAA'), reason: 'refresh-closed' });
    const firstRunId = handle.signaledRunId;
    await signalWithStart(input, { event: event(consentId, 'AAA'), reason: 'refresh-closed' }); // duplicate
    await signalWithStart(input, { event: event(consentId, 'FAIL'), reason: 'refresh-closed' });
    await signalWithStart(input, { event: event(consentId, 'AAA', 'task-0'), reason: 'other-task' });

    await eventually(() => (delivered(consentId).length === 3 ? true : undefined));
    const state = await eventually(async () => {
      const s = await query(consentId);
      return s.reports.every((r) => r.delivery === 'delivered') && s.received === 4 ? s : undefined;
    });
    expect(state).toMatchObject({ consentId, received: 4, duplicates: 1 });
    expect(state.reports.map((r) => [r.taskId, r.bankCode, r.reason, r.succeeded])).toEqual([
      ['task-1', 'AAA', 'refresh-closed', true],
      ['task-1', 'FAIL', 'refresh-closed', false],
      ['task-0', 'AAA', 'other-task', true],
    ]);

    const [first] = delivered(consentId);
    expect(first).toEqual({
      merchantId: TEST_MERCHANT,
      url: 'https://merchant.example/late',
      idempotencyKey: `${lateAccountEventsWorkflowId(TEST_MERCHANT, consentId)}:task-1:AAA`,
      event: {
        type: 'consent.late-bank-report',
        consentId,
        taskId: 'task-1',
        bankCode: 'AAA',
        bankName: 'AAA Bank',
        taskStatus: 'FINISHED',
        succeeded: true,
        accounts: [{ accountId: 'AAA-1', eventType: 'UPDATED' }],
        at: expect.any(String),
        reason: 'refresh-closed',
      },
    });
    // Two deliveries per run: the third was made by a continued run, which kept the reports and the dedup keys.
    const described = await t.client.workflow
      .getHandle(lateAccountEventsWorkflowId(TEST_MERCHANT, consentId))
      .describe();
    expect(described.runId).not.toBe(firstRunId);
    await signalWithStart(input, { event: event(consentId, 'FAIL'), reason: 'refresh-closed' });
    await eventually(async () => ((await query(consentId)).duplicates === 2 ? true : undefined));
    expect(delivered(consentId)).toHaveLength(3);
    await handle.terminate('test done');
  });

  it('a report the merchant refuses is kept as failed, and later ones are still delivered', async () => {
    const consentId = `late-${randomUUID()}`;
    notifyMerchant
      .mockRejectedValueOnce(ApplicationFailure.nonRetryable('merchant said 400', 'MerchantCallbackRejected'))
      .mockResolvedValue({ delivered: true, status: 200 });
    const input = { merchantId: 'test', consentId, callbackUrl: 'https://merchant.example/late' };
    const handle = await signalWithStart(input, { event: event(consentId, 'AAA'), reason: 'no-refresh' });
    await signalWithStart(input, { event: event(consentId, 'BBB'), reason: 'no-refresh' });
    const state = await eventually(async () => {
      const s = await query(consentId);
      return s.reports.length === 2 && s.reports.every((r) => r.delivery !== 'pending') ? s : undefined;
    });
    expect(state.reports.map((r) => [r.bankCode, r.delivery])).toEqual([
      ['AAA', 'failed'],
      ['BBB', 'delivered'],
    ]);
    await handle.terminate('test done');
  });

  it('without a callback URL, keeps the reports (queryable) and calls nobody; closes when idle', async () => {
    const consentId = `late-${randomUUID()}`;
    const handle = await signalWithStart(
      { merchantId: 'test', consentId, idleTimeout: '1s' },
      { event: event(consentId, 'AAA'), reason: 'other-task' },
    );
    const result = await handle.result();
    expect(result.reports.map((r) => [r.bankCode, r.delivery])).toEqual([['AAA', 'kept']]);
    expect((await query(consentId)).reports).toHaveLength(1); // a closed run still answers the query
    expect(delivered(consentId)).toEqual([]);
  });
});
