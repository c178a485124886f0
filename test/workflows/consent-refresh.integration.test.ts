import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  awaitConsentRefreshResult,
  consentRefreshHandle,
  getLateBankReports,
  lateBankReportsHandle,
} from '../../src/client/consent-refresh';
import type { AccountEventBody } from '../../src/shared/bank-wire';
import type { ConsentRefreshProgress, LateBankReportEvent } from '../../src/shared/consent-refresh';
import type { ConsentBank, WebhookDelivery } from '../../src/sandbox';
import { startMerchant } from '../activities/helpers/merchant-server';
import { recordConsentHistory } from '../helpers/histories';
import { startTestStack, TEST_CALLBACK_SIGNING_SECRET, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/** A late report's callback body (Standard Webhooks payload, the current version). */
type LateReportPayload = { type: string; timestamp: string; data: Omit<LateBankReportEvent, 'type'> };

/**
 * Consent refresh end to end on real parts: merchant facade over HTTP → Temporal → worker → real activities →
 * bank sandbox over HTTP → accountEvent webhooks → our receiver → signals. Expectations come from the sandbox's
 * ground truth (refreshTasks, accountWebhooksSent), never from timings.
 */

const bank = (bankCode: string, extra: Partial<ConsentBank> = {}): ConsentBank => ({
  bankCode,
  bankName: `${bankCode} Bank`,
  accounts: [`${bankCode}-acc-1`, `${bankCode}-acc-2`],
  ...extra,
});

describe('consent refresh end to end (dev server, sandbox, receiver, facade over HTTP)', () => {
  let stack: TestStack;
  let merchant: Awaited<ReturnType<typeof startMerchant>>;
  beforeAll(async () => {
    merchant = await startMerchant();
    // TRANSACTIONS_CALLBACK_URL: the consent-side merchant endpoint, where late bank reports go too.
    stack = await startTestStack({ transactionsCallbackUrl: merchant.url });
  });
  // Every answer of both listeners in this file (2xx and 4xx alike) must match the OpenAPI document.
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await stack?.close();
    await merchant?.close();
  });

  const post = async (consentId: string, body: unknown) => {
    const res = await stack.facade(`/consents/${consentId}/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      body: (await res.json()) as { consentId: string; workflowId: string; taskId: string },
    };
  };
  const get = async (consentId: string) => {
    const res = await stack.facade(`/consents/${consentId}/refresh`);
    return { status: res.status, body: (await res.json()) as ConsentRefreshProgress };
  };
  const tasksOf = (consentId: string) => stack.sandbox.control.refreshTasks().filter((t) => t.consentId === consentId);
  const eventsOf = (consentId: string): WebhookDelivery[] =>
    stack.sandbox.control
      .accountWebhooksSent()
      .filter((d) => d.kind === 'accountEvent' && (d.body as { consentId?: string }).consentId === consentId);
  const webhookCount = async (outcome: string) =>
    (await stack.metrics.webhooks.get()).values.find(
      (v) => v.labels.kind === 'accountEvent' && v.labels.outcome === outcome,
    )?.value ?? 0;
  const result = async (consentId: string) => {
    await awaitConsentRefreshResult(stack.t.client, TEST_MERCHANT, consentId);
    return (await get(consentId)).body;
  };

  it('five banks, random order, duplicates, one event before PUT /refresh answered: each bank once, as the bank sent it', async () => {
    const consentId = `five-${randomUUID()}`;
    const codes = ['AAAA', 'BBBB', 'CCCC', 'DDDD', 'EEEE'];
    stack.sandbox.control.setConsent(consentId, {
      banks: codes.map((code) => bank(code, { delayMs: Math.floor(Math.random() * 400) })),
      duplicateEvents: 3,
      eventBeforeResponse: true,
    });

    const started = await post(consentId, { quietPeriod: '2s', timeout: '60s' });
    expect(started.status).toBe(202);
    const progress = await eventually(async () => {
      const p = await get(consentId);
      return p.body.done ? p.body : undefined;
    });

    // Ground truth: one task, and the bodies the bank actually sent for it.
    const [task, ...others] = tasksOf(consentId);
    expect(others).toEqual([]);
    expect(progress.taskId).toBe(task!.taskId);
    expect(started.body).toEqual({ consentId, workflowId: `consent-refresh:${consentId}`, taskId: task!.taskId });
    const sent = new Map(eventsOf(consentId).map((d) => [(d.body as unknown as AccountEventBody).bankCode, d.body]));
    expect([...sent.keys()].sort()).toEqual(codes);
    expect(progress.banks.map((b) => b.bankCode).sort()).toEqual(codes);
    for (const b of progress.banks) {
      const body = sent.get(b.bankCode) as unknown as AccountEventBody;
      expect({ bankCode: b.bankCode, bankName: b.bankName, taskStatus: b.taskStatus, accounts: b.accounts }).toEqual({
        bankCode: body.bankCode,
        bankName: body.bankName,
        taskStatus: body.taskStatus,
        accounts: body.accounts,
      });
      expect(typeof b.at).toBe('string');
    }
    expect(progress).toMatchObject({ done: true, missing: [], staleEvents: 0, endedBy: 'quiet-period' });
    // Every copy our receiver answered 202 became a signal; all but the first per bank are duplicates.
    const signalled = eventsOf(consentId).filter((d) => d.attempts.at(-1)?.status === 202).length;
    expect(progress.duplicateEvents).toBe(signalled - codes.length);
    expect(progress.duplicateEvents).toBeGreaterThan(0);

    // The first bank's event reached the workflow before PUT /refresh's answer did.
    const handle = consentRefreshHandle(stack.t.client, consentId);
    const events = (await handle.fetchHistory()).events ?? [];
    const firstSignal = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
    const refreshAnswered = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
    expect(firstSignal).toBeGreaterThan(-1);
    expect(firstSignal).toBeLessThan(refreshAnswered);
    await recordConsentHistory('consent-refresh-v5-five-banks', handle);
  });

  it("an earlier task's event does not complete the refresh: it is handed off as a late bank report", async () => {
    const consentId = `stale-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA', { delayMs: 50 }), bank('BBBB', { neverAnswers: true })],
    });
    const { body: started } = await post(consentId, { expectedBankCodes: ['AAAA', 'BBBB'], timeout: '60s' });
    await eventually(async () => ((await get(consentId)).body.banks.length === 1 ? true : undefined));

    const late: AccountEventBody = {
      consentId,
      taskId: 'an-earlier-task',
      taskStatus: 'FINISHED',
      bankCode: 'BBBB',
      bankName: 'BBBB Bank',
      accounts: [{ accountId: 'BBBB-acc-1', eventType: 'UPDATED' }],
    };
    const staleDelivery = await stack.sandbox.control.sendAccountEvent({ ...late });
    expect(staleDelivery.attempts.at(-1)?.status).toBe(202);
    // The receiver saw the running refresh's RefreshTaskId: the refresh never got it, the late workflow did.
    const afterStale = (await get(consentId)).body;
    expect(afterStale).toMatchObject({ done: false, staleEvents: 0, missing: ['BBBB'] });
    const reports = await eventually(async () => {
      const r = (await getLateBankReports(stack.t.client, TEST_MERCHANT, consentId)).reports;
      return r.length === 1 ? r : undefined;
    });
    expect(reports[0]).toMatchObject({ taskId: 'an-earlier-task', bankCode: 'BBBB', reason: 'other-task' });

    // The bank's real answer for BBBB, with the current taskId, completes it.
    await stack.sandbox.control.sendAccountEvent({ ...late, taskId: started.taskId });
    const result = await awaitConsentRefreshResult(stack.t.client, TEST_MERCHANT, consentId);
    expect(result).toMatchObject({ endedBy: 'all-reported', staleEvents: 0, duplicateEvents: 0, missing: [] });
    // An earlier task's report does not amend this result.
    expect(result.lateReports).toBe(0);
    expect(result.banks.find((b) => b.bankCode === 'BBBB')?.accounts).toEqual(late.accounts);
    await recordConsentHistory('consent-refresh-v5-stale-event', consentRefreshHandle(stack.t.client, consentId));
    await lateBankReportsHandle(stack.t.client, TEST_MERCHANT, consentId).terminate('test done');
  });

  it('one bank never answers: ends at the timeout with the others and that bank missing', async () => {
    const consentId = `silent-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA'), bank('BBBB', { taskStatus: 'FAILED' }), bank('CCCC', { neverAnswers: true })],
    });
    const { status } = await post(consentId, { expectedBankCodes: ['AAAA', 'BBBB', 'CCCC'], timeout: '3s' });
    expect(status).toBe(202);

    const result = await awaitConsentRefreshResult(stack.t.client, TEST_MERCHANT, consentId);
    expect(result).toMatchObject({ done: true, endedBy: 'timeout', missing: ['CCCC'] });
    expect(result.banks.map((b) => [b.bankCode, b.taskStatus, b.succeeded]).sort()).toEqual([
      ['AAAA', 'FINISHED', true],
      ['BBBB', 'FAILED', false],
    ]);
    expect(
      eventsOf(consentId)
        .map((d) => (d.body as { bankCode?: string }).bankCode)
        .sort(),
    ).toEqual(['AAAA', 'BBBB']);
    const { body } = await get(consentId);
    expect(body).toMatchObject({ done: true, missing: ['CCCC'] });
    await recordConsentHistory('consent-refresh-v5-timeout', consentRefreshHandle(stack.t.client, consentId));
  });

  it('two banks answer after the refresh closed: the merchant gets them as late bank reports, the result shows them late, nothing is ignored', async () => {
    const consentId = `late-${randomUUID()}`;
    // BBBB and CCCC answer only when this test sends their events, after the close (the bank's retries, late).
    stack.sandbox.control.setConsent(consentId, {
      banks: [
        bank('AAAA', { delayMs: 50 }),
        bank('BBBB', { neverAnswers: true }),
        bank('CCCC', { neverAnswers: true }),
      ],
    });
    const lateBefore = await webhookCount('late');
    const ignoredBefore = await webhookCount('no_target');
    const started = await post(consentId, { quietPeriod: '1s', timeout: '60s' });
    expect(started.status).toBe(202);
    const closed = await awaitConsentRefreshResult(stack.t.client, TEST_MERCHANT, consentId);
    expect(closed).toMatchObject({ endedBy: 'quiet-period', lateReports: 0 });
    expect(closed.banks.map((b) => b.bankCode)).toEqual(['AAAA']);

    // The bank's events for the same task, after the close, through the sandbox's webhook sender (real HTTP).
    const { taskId } = started.body;
    for (const code of ['BBBB', 'CCCC']) {
      const delivery = await stack.sandbox.control.sendAccountEvent({
        consentId,
        taskId,
        taskStatus: code === 'CCCC' ? 'FAILED' : 'FINISHED',
        bankCode: code,
        bankName: `${code} Bank`,
        accounts: [{ accountId: `${code}-acc-1`, eventType: 'UPDATED' }],
      });
      expect(delivery.outcome).toBe('delivered');
    }
    // Ground truth: every attempt of every accountEvent of this consent was answered 202, none 200 ignored.
    const statuses = eventsOf(consentId).flatMap((d) => d.attempts.map((a) => a.status));
    expect(statuses.length).toBeGreaterThanOrEqual(3);
    expect(new Set(statuses)).toEqual(new Set([202]));
    expect(await webhookCount('late')).toBe(lateBefore + 2);
    expect(await webhookCount('no_target')).toBe(ignoredBefore);

    // The merchant's endpoint receives each as a signed consent.late-bank-report.
    const ours = () =>
      merchant.received
        .map((r) => ({ headers: r.headers, payload: JSON.parse(r.body) as LateReportPayload, body: r.body }))
        .filter((r) => r.payload.type === 'consent.late-bank-report' && r.payload.data.consentId === consentId)
        .map((r) => ({ ...r, event: r.payload.data }));
    const received = await eventually(() => (ours().length === 2 ? ours() : undefined));
    expect(received.map((r) => [r.event.bankCode, r.event.taskStatus, r.event.succeeded]).sort()).toEqual([
      ['BBBB', 'FINISHED', true],
      ['CCCC', 'FAILED', false],
    ]);
    for (const r of received) {
      expect(r.event).toMatchObject({
        taskId,
        bankName: `${r.event.bankCode} Bank`,
        accounts: [{ accountId: `${r.event.bankCode}-acc-1`, eventType: 'UPDATED' }],
        reason: 'refresh-closed',
        at: expect.any(String),
      });
      expect(r.headers['webhook-id']).toBe(
        `consent-late-reports:${TEST_MERCHANT}:${consentId}:${taskId}:${r.event.bankCode}`,
      );
      expect(new Webhook(TEST_CALLBACK_SIGNING_SECRET).verify(r.body, r.headers as Record<string, string>)).toEqual(
        r.payload,
      );
      expect(r.payload.timestamp).toBe(r.event.at);
    }

    // GET /consents/:id/refresh: the last refresh's result amended by its late reports.
    const amended = await eventually(async () => {
      const body = (await get(consentId)).body;
      return body.lateReports === 2 ? body : undefined;
    });
    expect(amended).toMatchObject({ done: true, taskId, endedBy: 'quiet-period', missing: [], lateReports: 2 });
    expect(amended.banks.map((b) => [b.bankCode, b.late ?? false])).toEqual([
      ['AAAA', false],
      ['BBBB', true],
      ['CCCC', true],
    ]);
    expect(amended.banks.find((b) => b.bankCode === 'CCCC')).toMatchObject({
      succeeded: false,
      at: expect.any(String),
    });
    await recordConsentHistory(
      'consent-refresh-v5-before-late-reports',
      consentRefreshHandle(stack.t.client, consentId),
    );
    await recordConsentHistory(
      'consent-late-reports-delivered',
      lateBankReportsHandle(stack.t.client, TEST_MERCHANT, consentId),
    );
    await lateBankReportsHandle(stack.t.client, TEST_MERCHANT, consentId).terminate('test done');
  });

  it('a second refresh, no expectedBankCodes: waits for the three banks the first one saw, not the quiet period after the first', async () => {
    const consentId = `learned-${randomUUID()}`;
    const fast = { delayMs: 50 };
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA', fast), bank('BBBB', fast), bank('CCCC', fast)],
    });
    const first = await post(consentId, { quietPeriod: '1s', timeout: '60s' });
    expect(first.status).toBe(202);
    const firstResult = await result(consentId);
    expect(firstResult.banks.map((b) => b.bankCode).sort()).toEqual(['AAAA', 'BBBB', 'CCCC']);

    // This time CCCC answers long after the quiet period that follows AAAA and BBBB.
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA', fast), bank('BBBB', fast), bank('CCCC', { delayMs: 4_000 })],
    });
    const second = await post(consentId, { quietPeriod: '1s', timeout: '60s' });
    expect(second.status).toBe(202);
    expect(second.body.taskId).not.toBe(first.body.taskId);
    const secondResult = await result(consentId);
    expect(secondResult).toMatchObject({
      taskId: second.body.taskId,
      endedBy: 'quiet-period',
      missing: [],
      knownBankCodes: ['AAAA', 'BBBB', 'CCCC'],
      lateReports: 0,
    });
    // CCCC reported to the refresh itself, on time: not a late report.
    expect(secondResult.banks.map((b) => [b.bankCode, b.late ?? false]).sort()).toEqual([
      ['AAAA', false],
      ['BBBB', false],
      ['CCCC', false],
    ]);
    const [, task] = tasksOf(consentId);
    expect(task!.banks.find((b) => b.bankCode === 'CCCC')?.delayMs).toBeGreaterThan(1_000);
    expect((await getLateBankReports(stack.t.client, TEST_MERCHANT, consentId)).reports).toEqual([]);
    await recordConsentHistory('consent-refresh-v5-learned-banks', consentRefreshHandle(stack.t.client, consentId));
  });

  it('the merchant overrides the learned banks with expectedBankCodes', async () => {
    const consentId = `override-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA', { delayMs: 50 }), bank('BBBB', { delayMs: 50 })],
    });
    await post(consentId, { quietPeriod: '1s', timeout: '60s' });
    expect((await result(consentId)).banks).toHaveLength(2);

    // BBBB is gone from the consent; the merchant knows, and says so.
    stack.sandbox.control.setConsent(consentId, { banks: [bank('AAAA', { delayMs: 50 })] });
    await post(consentId, { expectedBankCodes: ['AAAA'], timeout: '60s' });
    const overridden = await result(consentId);
    expect(overridden).toMatchObject({ endedBy: 'all-reported', missing: [], expectedBankCodes: ['AAAA'] });
  });

  it('two concurrent requests for one consent: one PUT /refresh at the bank, the same taskId; a later one is a new run', async () => {
    const consentId = `twice-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA', { delayMs: 300 }), bank('BBBB', { delayMs: 300 })],
    });
    const body = { expectedBankCodes: ['AAAA', 'BBBB'], timeout: '60s' };

    const [a, b] = await Promise.all([post(consentId, body), post(consentId, body)]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.taskId).toBe(b.body.taskId);
    expect(tasksOf(consentId).map((t) => t.taskId)).toEqual([a.body.taskId]);

    await awaitConsentRefreshResult(stack.t.client, TEST_MERCHANT, consentId);
    const again = await post(consentId, body);
    expect(again.status).toBe(202);
    expect(again.body.taskId).not.toBe(a.body.taskId);
    expect(tasksOf(consentId).map((t) => t.taskId)).toEqual([a.body.taskId, again.body.taskId]);
    const result = await awaitConsentRefreshResult(stack.t.client, TEST_MERCHANT, consentId);
    expect(result.taskId).toBe(again.body.taskId);
  });

  it('facade: 404 for a consent never refreshed, 400 for a bad body or consent id', async () => {
    const unknown = await get(`never-${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect((await post('ok-id', { timeout: 'soon' })).status).toBe(400);
    expect((await post('ok-id', { expectedBankCodes: 'AAAA' })).status).toBe(400);
    expect((await post('ok-id', { unexpected: true })).status).toBe(400);
    expect((await post('bad%20id', {})).status).toBe(400);
    // A body that is not JSON is refused, not read as {}.
    const text = await stack.facade('/consents/ok-id/refresh', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"expectedBankCodes":["AAAA"]}',
    });
    expect(text.status).toBe(415);
    expect(tasksOf('ok-id')).toEqual([]);
  });

  it('facade: a POST without a body starts a refresh with the defaults, as {} does', async () => {
    const consentId = `nobody-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, { banks: [bank('AAAA')] });
    const res = await stack.facade(`/consents/${consentId}/refresh`, { method: 'POST' });
    expect(res.status).toBe(202);
    const { taskId } = (await res.json()) as { taskId: string };
    expect(tasksOf(consentId).map((t) => t.taskId)).toEqual([taskId]);
    await consentRefreshHandle(stack.t.client, consentId).terminate('test done');
  });
});
