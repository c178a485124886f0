import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { createPublicApp } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { releaseConsent } from '../../src/client/consent-claims';
import { consentRefreshHandle, getConsentRefreshProgress } from '../../src/client/consent-refresh';
import type { AccountEventBody } from '../../src/shared/bank-wire';
import { lateAccountEventsQuery } from '../../src/shared/consent-refresh';
import { transactionEventsStateQuery } from '../../src/shared/transaction-events';
import { lateAccountEventsWorkflowId, transactionEventsWorkflowId } from '../../src/shared/ids';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { claimTestConsent, TEST_MERCHANT, testMerchants } from '../helpers/merchants';

/**
 * POST /webhooks/accounts on the real stack: authenticity and shape are checked before any Temporal call, so a
 * rejected webhook leaves no trace in the workflow's history.
 */
describe('POST /webhooks/accounts (receiver on the real stack)', () => {
  let stack: TestStack;
  let consentId: string;
  let taskId: string;

  beforeAll(async () => {
    stack = await startTestStack();
    // A refresh that waits: its only bank never answers, so every signal in its history is one of ours.
    consentId = `rx-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [{ bankCode: 'QUIET', bankName: 'Quiet Bank', accounts: ['q-1'], neverAnswers: true }],
    });
    const res = await stack.facade(`/consents/${consentId}/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ expectedBankCodes: ['QUIET'], timeout: '2m' }),
    });
    expect(res.status).toBe(202);
    taskId = ((await res.json()) as { taskId: string }).taskId;
  });
  // Every answer of both listeners in this file (2xx and 4xx alike) must match the OpenAPI document.
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await consentRefreshHandle(stack.t.client, consentId)
      .terminate('test done')
      .catch(() => undefined);
    await stack?.close();
  });

  const event = (): AccountEventBody => ({
    consentId,
    taskId,
    taskStatus: 'FINISHED',
    bankCode: 'QUIET',
    bankName: 'Quiet Bank',
    accounts: [{ accountId: 'q-1', eventType: 'ADDED' }],
  });
  const send = async (body: string, headers: Record<string, string>) => {
    const res = await fetch(`${stack.publicUrl}/webhooks/accounts`, { method: 'POST', headers, body });
    return { status: res.status, body: (await res.json()) as { error?: string; message?: string; status?: string } };
  };
  const json = (auth?: string) => ({
    'content-type': 'application/json',
    ...(auth === undefined ? {} : { authorization: auth }),
  });
  const signalsInHistory = async () => {
    const history = await consentRefreshHandle(stack.t.client, consentId).fetchHistory();
    return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
  };
  /** The consent is the stack merchant's (its account webhooks start something only then); released by `release`. */
  const claim = (id: string) => claimTestConsent(stack.t, id);
  const release = (id: string) => releaseConsent(stack.t.client, TEST_MERCHANT, id).catch(() => undefined);
  const webhookCount = async (kind: string, outcome: string) =>
    (await stack.metrics.webhooks.get()).values.find((v) => v.labels.kind === kind && v.labels.outcome === outcome)
      ?.value ?? 0;

  it('answers 401 to a missing or wrong Authorization, and signals nothing', async () => {
    const body = JSON.stringify(event());
    const missing = await send(body, json());
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    expect((await send(body, json('Basic wrong='))).status).toBe(401);
    expect((await send(body, json(`${stack.webhooks.securityHeader}x`))).status).toBe(401);
    expect(await signalsInHistory()).toBe(0);
    expect(await webhookCount('unknown', 'rejected_auth')).toBe(3);
  });

  it('answers 400 to a malformed body, 415 to non-JSON and 413 to an oversized body, and signals nothing', async () => {
    const auth = json(stack.webhooks.securityHeader);
    const { bankCode: _dropped, ...withoutBankCode } = event();
    const malformed = await send(JSON.stringify(withoutBankCode), auth);
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'bad_request', message: 'Malformed accountEvent body' });
    expect((await send(JSON.stringify({ ...event(), accounts: 'q-1' }), auth)).status).toBe(400);
    expect((await send(JSON.stringify({ consentId, accounts: [] }), auth)).status).toBe(400); // transactionEvent, no accounts
    expect((await send('{"consentId": ', auth)).status).toBe(400);
    expect((await send('[]', auth)).status).toBe(400);
    const text = await send(JSON.stringify(event()), { ...auth, 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    const huge = {
      ...event(),
      accounts: Array.from({ length: 20_000 }, (_, i) => ({ accountId: `a-${i}`, eventType: 'ADDED' })),
    };
    expect((await send(JSON.stringify(huge), auth)).status).toBe(413);
    expect(await signalsInHistory()).toBe(0);
    expect((await getConsentRefreshProgress(stack.t.client, TEST_MERCHANT, consentId)).banks).toEqual([]);
  });

  it('answers 400 naming the field to ids with control characters, spaces, over 128 characters, or a consentId that is no reference, and starts nothing', async () => {
    const auth = json(stack.webhooks.securityHeader);
    const txConsent = `tx-bad-${randomUUID()}`;
    const tx = { consentId: txConsent, eventType: 'NEW', accounts: [{ accountId: 'OPB-1' }] };
    const cases: [unknown, string][] = [
      [{ ...event(), consentId: `${consentId}\u0000` }, 'consentId'],
      [{ ...event(), consentId: 'new\nline' }, 'consentId'],
      [{ ...event(), taskId: `${taskId}\r\nX-Injected: 1` }, 'taskId'],
      [{ ...event(), taskId: 'a b' }, 'taskId'],
      [{ ...event(), bankCode: 'QUI\tET' }, 'bankCode'],
      [{ ...event(), bankName: 'Quiet\u0007Bank' }, 'bankName'],
      [{ ...event(), accounts: [{ accountId: 'q'.repeat(129), eventType: 'ADDED' }] }, 'accounts.0.accountId'],
      [{ ...event(), accounts: [{ accountId: 'q-\u001b[31m', eventType: 'ADDED' }] }, 'accounts.0.accountId'],
      [{ ...tx, consentId: `${txConsent}\u0001` }, 'consentId'],
      [{ ...tx, consentId: 'tx with spaces' }, 'consentId'],
      [{ ...tx, consentId: '..' }, 'consentId'],
      [{ ...tx, consentId: 'c/../../x' }, 'consentId'],
      [{ ...tx, consentId: 'c'.repeat(129) }, 'consentId'],
      [{ ...tx, accounts: [{ accountId: 'OPB\u00001' }] }, 'accounts.0.accountId'],
      [{ ...tx, eventType: 'NEW\u0085' }, 'eventType'],
    ];
    for (const [body, field] of cases) {
      const res = await fetch(`${stack.publicUrl}/webhooks/accounts`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify(body),
      });
      expect({ field, status: res.status }).toEqual({ field, status: 400 });
      const problem = (await res.json()) as { details?: { path: string; message: string }[] };
      expect(problem.details?.map((d) => d.path)).toContain(field);
    }
    expect(await signalsInHistory()).toBe(0);
    // Nothing started: no late-report or transaction workflow for any of these consents.
    for (const id of [consentId, txConsent, 'tx with spaces', 'c'.repeat(129)]) {
      for (const workflowId of [
        lateAccountEventsWorkflowId(TEST_MERCHANT, id),
        transactionEventsWorkflowId(TEST_MERCHANT, id),
      ]) {
        await expect(stack.t.client.workflow.getHandle(workflowId).describe()).rejects.toThrow(/not found/i);
      }
    }
  });

  it('signals a transactionEvent of 2,500 accounts in parts of at most 1,000, and its workflow delivers every account in batches of at most 1,000', async () => {
    const txConsent = `tx-big-${randomUUID()}`;
    await claim(txConsent);
    const accounts = Array.from({ length: 2_500 }, (_, i) => ({ accountId: `OPB-${String(i).padStart(5, '0')}` }));
    const res = await send(JSON.stringify({ consentId: txConsent, accounts }), json(stack.webhooks.securityHeader));
    expect(res.status).toBe(202);
    const handle = stack.t.client.workflow.getHandle(transactionEventsWorkflowId(TEST_MERCHANT, txConsent));
    const state = await eventually(async () => {
      const s = await handle.query(transactionEventsStateQuery);
      return s.events === 3 && s.batches === 3 && s.pendingAccountIds.length === 0 ? s : undefined;
    });
    expect(state).toMatchObject({ consentId: txConsent, events: 3, batches: 3 });
    // The signals as Temporal holds them: three, none over the bound, together every account once.
    const history = await handle.fetchHistory();
    const signalled: string[][] = [];
    for (const e of history.events ?? []) {
      const payloads = e.workflowExecutionSignaledEventAttributes?.input?.payloads;
      if (!payloads) continue;
      const [decoded] = await stack.payloadCodec.decode(payloads);
      const signal = JSON.parse(Buffer.from(decoded!.data!).toString('utf8')) as { accounts: { accountId: string }[] };
      signalled.push(signal.accounts.map((a) => a.accountId));
    }
    expect(signalled.map((s) => s.length)).toEqual([1_000, 1_000, 500]);
    expect(signalled.flat().sort()).toEqual(accounts.map((a) => a.accountId));
    await handle.terminate('test done');
  });

  it("hands another task's accountEvent off while the refresh runs: the refresh never sees it", async () => {
    const before = await signalsInHistory();
    const other = { ...event(), taskId: `earlier-${taskId}` };
    const res = await send(JSON.stringify(other), json(stack.webhooks.securityHeader));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ workflowId: lateAccountEventsWorkflowId(TEST_MERCHANT, consentId) });
    const handle = stack.t.client.workflow.getHandle(lateAccountEventsWorkflowId(TEST_MERCHANT, consentId));
    const state = await eventually(async () => {
      const s = await handle.query(lateAccountEventsQuery);
      return s.reports.length === 1 ? s : undefined;
    });
    expect(state.reports[0]).toMatchObject({ taskId: other.taskId, reason: 'other-task' });
    expect(await signalsInHistory()).toBe(before);
    expect((await getConsentRefreshProgress(stack.t.client, TEST_MERCHANT, consentId)).staleEvents).toBe(0);
    await handle.terminate('test done');
  });

  it('answers 202 once Temporal accepted the accountEvent signal', async () => {
    const accepted = await send(JSON.stringify(event()), json(stack.webhooks.securityHeader));
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'accepted' });
    expect(await signalsInHistory()).toBe(1);
    const progress = await getConsentRefreshProgress(stack.t.client, TEST_MERCHANT, consentId);
    expect(progress.banks.map((b) => b.bankCode)).toEqual(['QUIET']);
    expect(await webhookCount('accountEvent', 'accepted')).toBeGreaterThanOrEqual(1);
  });

  it('hands an accountEvent for a consent with no refresh off as a late bank report (202, counted late)', async () => {
    const orphan = { ...event(), consentId: `none-${randomUUID()}` };
    await claim(orphan.consentId);
    const lateBefore = await webhookCount('accountEvent', 'late');
    const res = await send(JSON.stringify(orphan), json(stack.webhooks.securityHeader));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      status: 'accepted',
      workflowId: lateAccountEventsWorkflowId(TEST_MERCHANT, orphan.consentId),
    });
    const handle = stack.t.client.workflow.getHandle(lateAccountEventsWorkflowId(TEST_MERCHANT, orphan.consentId));
    const state = await eventually(async () => {
      const s = await handle.query(lateAccountEventsQuery);
      return s.reports.length === 1 ? s : undefined;
    });
    expect(state.reports[0]).toMatchObject({ taskId, bankCode: 'QUIET', reason: 'no-refresh', delivery: 'kept' });
    expect(await webhookCount('accountEvent', 'late')).toBe(lateBefore + 1);
    expect(await webhookCount('accountEvent', 'no_target')).toBe(0);
    await handle.terminate('test done');
    await release(orphan.consentId);
  });

  it('hands a transactionEvent off with signal-with-start (202)', async () => {
    const txConsent = `tx-${randomUUID()}`;
    const body = { consentId: txConsent, eventType: 'NEW', accounts: [{ accountId: 'OPB-1' }] };
    await claim(txConsent);
    const res = await send(JSON.stringify(body), json(stack.webhooks.securityHeader));
    expect(res.status).toBe(202);
    const handle = stack.t.client.workflow.getHandle(transactionEventsWorkflowId(TEST_MERCHANT, txConsent));
    const state = await eventually(async () => {
      const s = await handle.query(transactionEventsStateQuery);
      return s.events === 1 ? s : undefined;
    });
    expect(state.consentId).toBe(txConsent);
    await handle.terminate('test done');
    await release(txConsent);
  });

  it('answers 503 when Temporal cannot take the signal, so the bank retries', async () => {
    // A Temporal client whose every call fails as an unreachable server does (gRPC UNAVAILABLE).
    const unavailable = () =>
      Promise.reject(
        Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED'), {
          code: 14,
          details: 'connect ECONNREFUSED',
          metadata: {},
        }),
      );
    const client = {
      workflow: { getHandle: () => ({ signal: unavailable, describe: unavailable }), signalWithStart: unavailable },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    } as unknown as Client;
    const metrics = createMetrics();
    const app = createPublicApp({
      client,
      taskQueue: 'unused',
      webhooks: { hashSecret: 'x'.repeat(32), securityHeader: 'Token abc=' },
      merchantApiKeys: [],
      merchants: testMerchants(),
      logger: pino({ level: 'silent' }),
      metrics,
      checkTemporal: unavailable,
    });
    const server: Server = await listen(app, 0, '127.0.0.1');
    try {
      const url = `http://127.0.0.1:${boundPort(server)}/webhooks/accounts`;
      const headers = { 'content-type': 'application/json', authorization: 'Token abc=' };
      const account = await fetch(url, { method: 'POST', headers, body: JSON.stringify(event()) });
      expect(account.status).toBe(503);
      expect(account.headers.get('retry-after')).toBeTruthy();
      const tx = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ consentId, accounts: [{ accountId: 'a' }] }),
      });
      expect(tx.status).toBe(503);
      expect((await metrics.webhooks.get()).values.filter((v) => v.labels.outcome === 'unavailable')).toHaveLength(2);
    } finally {
      await closeServer(server, 100);
    }
  });

  it('accepts any Authorization when no security header is configured', async () => {
    const app = createPublicApp({
      ...stack.appDeps,
      webhooks: { ...stack.webhooks, securityHeader: '' },
      metrics: createMetrics(),
    });
    const server = await listen(app, 0, '127.0.0.1');
    const txConsent = `open-${randomUUID()}`;
    await claim(txConsent);
    try {
      const body = JSON.stringify({ consentId: txConsent, accounts: [{ accountId: 'a' }] });
      const url = `http://127.0.0.1:${boundPort(server)}/webhooks/accounts`;
      const res = await fetch(url, { method: 'POST', headers: json(), body });
      expect(res.status).toBe(202);
      await res.arrayBuffer();
    } finally {
      await closeServer(server, 100);
      await stack.t.client.workflow
        .getHandle(transactionEventsWorkflowId(TEST_MERCHANT, txConsent))
        .terminate('test done');
      await release(txConsent);
    }
  });
});
