import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { awaitConsentRefreshResult, consentRefreshHandle } from '../../src/client/consent-refresh';
import type { AccountEventBody } from '../../src/shared/bank-wire';
import type { ConsentRefreshProgress } from '../../src/shared/consent-refresh';
import type { ConsentBank, WebhookDelivery } from '../../src/sandbox';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

/**
 * Consent refresh end to end on real parts: merchant facade over HTTP → Temporal → worker → real activities →
 * bank sandbox over HTTP → accountEvent webhooks → our receiver → signals. Expectations come from the sandbox's
 * ground truth (refreshTasks, accountWebhooksSent), never from timings.
 */

/**
 * A history as JSON (enum names, string longs, base64 bytes), read back by test/replay/consent-replay.test.ts with
 * History.fromObject. (The SDK's historyToJSON fails in this install: two copies of protobufjs 8.)
 */
function historyFile(history: temporal.api.history.v1.IHistory): string {
  const { History } = temporal.api.history.v1;
  const json = History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
  return JSON.stringify(json, null, 1) + '\n';
}

/** RECORD_HISTORIES=1 writes these runs' histories to test/histories (replayed by test/replay/consent-replay.test.ts). */
async function recordHistory(name: string, handle: WorkflowHandle): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  const history = await handle.fetchHistory();
  writeFileSync(join(__dirname, '..', 'histories', `${name}.json`), historyFile(history));
}

const bank = (bankCode: string, extra: Partial<ConsentBank> = {}): ConsentBank => ({
  bankCode,
  bankName: `${bankCode} Bank`,
  accounts: [`${bankCode}-acc-1`, `${bankCode}-acc-2`],
  ...extra,
});

describe('consent refresh end to end (dev server, sandbox, receiver, facade over HTTP)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

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
    await recordHistory('consent-refresh-five-banks', handle);
  });

  it('an event with a stale taskId does not complete the refresh, and is counted', async () => {
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
    const afterStale = (await get(consentId)).body;
    expect(afterStale).toMatchObject({ done: false, staleEvents: 1, missing: ['BBBB'] });

    // The bank's real answer for BBBB, with the current taskId, completes it.
    await stack.sandbox.control.sendAccountEvent({ ...late, taskId: started.taskId });
    const result = await awaitConsentRefreshResult(stack.t.client, consentId);
    expect(result).toMatchObject({ endedBy: 'all-reported', staleEvents: 1, duplicateEvents: 0, missing: [] });
    expect(result.banks.find((b) => b.bankCode === 'BBBB')?.accounts).toEqual(late.accounts);
    await recordHistory('consent-refresh-stale-event', consentRefreshHandle(stack.t.client, consentId));
  });

  it('one bank never answers: ends at the timeout with the others and that bank missing', async () => {
    const consentId = `silent-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [bank('AAAA'), bank('BBBB', { taskStatus: 'FAILED' }), bank('CCCC', { neverAnswers: true })],
    });
    const { status } = await post(consentId, { expectedBankCodes: ['AAAA', 'BBBB', 'CCCC'], timeout: '3s' });
    expect(status).toBe(202);

    const result = await awaitConsentRefreshResult(stack.t.client, consentId);
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
    await recordHistory('consent-refresh-timeout', consentRefreshHandle(stack.t.client, consentId));
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

    await awaitConsentRefreshResult(stack.t.client, consentId);
    const again = await post(consentId, body);
    expect(again.status).toBe(202);
    expect(again.body.taskId).not.toBe(a.body.taskId);
    expect(tasksOf(consentId).map((t) => t.taskId)).toEqual([a.body.taskId, again.body.taskId]);
    const result = await awaitConsentRefreshResult(stack.t.client, consentId);
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
