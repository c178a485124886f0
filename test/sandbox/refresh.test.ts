import { deriveConsent, type RunningSandbox } from '../../src/sandbox';
import { api, sandbox, startReceiver, token, waitFor, type Receiver } from './helpers';

const HEADER = 'Sandbox secret=+/ 42';

describe('sandbox refresh and account webhooks', () => {
  let sbx: RunningSandbox;
  let receiver: Receiver;
  let t: string;
  type Options = NonNullable<Parameters<typeof sandbox>[0]>;
  const start = async (options: Options | ((receiverUrl: string) => Options) = {}) => {
    receiver = await startReceiver();
    sbx = await sandbox({
      accountWebhook: {
        endpoint: `${receiver.url}/webhooks/accounts`,
        securityHeader: HEADER,
        activation: 'immediate',
      },
      ...(typeof options === 'function' ? options(receiver.url) : options),
    });
    t = await token(sbx.url);
  };
  afterEach(async () => {
    await sbx?.close();
    await receiver?.close();
  });

  const refresh = (consentId: unknown) => api(sbx.url, t, 'PUT', '/refresh', { consentId });

  test('derives 2–4 other banks with 1–3 accounts each, deterministically from the consentId', () => {
    for (const consentId of ['c-1', 'c-2', 'consent-with-a-long-id', 'x']) {
      const consent = deriveConsent(consentId);
      expect(consent).toEqual(deriveConsent(consentId));
      expect(consent.banks.length).toBeGreaterThanOrEqual(2);
      expect(consent.banks.length).toBeLessThanOrEqual(4);
      for (const bank of consent.banks) {
        expect(bank.accounts.length).toBeGreaterThanOrEqual(1);
        expect(bank.accounts.length).toBeLessThanOrEqual(3);
      }
      expect(new Set(consent.banks.map((b) => b.bankCode)).size).toBe(consent.banks.length);
      expect(consent.operatingAccounts.length).toBeGreaterThanOrEqual(1);
    }
  });

  test('PUT /refresh validates its JSON body', async () => {
    await start();
    expect((await refresh(undefined)).status).toBe(400);
    expect((await refresh('')).status).toBe(400);
    expect((await refresh(42)).status).toBe(400);
    const form = await fetch(`${sbx.url}/refresh`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'consentId=c',
    });
    expect(form.status).toBe(415);
    await form.arrayBuffer();
    expect(sbx.control.refreshTasks()).toEqual([]);
  });

  test('one accountEvent per bank, with the security header as Authorization', async () => {
    await start();
    const res = await refresh('consent-1');
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ taskId: expect.any(String), consentId: 'consent-1' });
    const { banks } = sbx.control.consent('consent-1');
    await waitFor(() => receiver.received.length === banks.length, 'one event per bank');
    for (const r of receiver.received) {
      expect(r.method).toBe('POST');
      expect(r.url).toBe('/webhooks/accounts');
      expect(r.headers.authorization).toBe(HEADER);
      expect(r.headers['content-type']).toBe('application/json');
    }
    const bodies = receiver.received.map((r) => r.body as Record<string, unknown>);
    expect(bodies.map((b) => b.bankCode).sort()).toEqual(banks.map((b) => b.bankCode).sort());
    for (const bank of banks) {
      expect(bodies.find((b) => b.bankCode === bank.bankCode)).toEqual({
        consentId: 'consent-1',
        taskId: res.body.taskId,
        taskStatus: 'FINISHED',
        bankCode: bank.bankCode,
        bankName: bank.bankName,
        accounts: bank.accounts.map((accountId) => ({ accountId, eventType: 'ADDED' })),
      });
    }
    const [task] = sbx.control.refreshTasks();
    expect(task!.taskId).toBe(res.body.taskId);
    expect(task!.banks.map((b) => b.bankCode)).toEqual(banks.map((b) => b.bankCode));
    await waitFor(() => sbx.control.refreshTasks()[0]!.events.every((e) => e.outcome === 'delivered'), 'delivered');

    // A second refresh of the same consent: a new task, accounts UPDATED.
    const again = await refresh('consent-1');
    expect(again.body.taskId).not.toBe(res.body.taskId);
    await waitFor(() => receiver.received.length === 2 * banks.length, 'second round');
    expect((receiver.received.at(-1)!.body as { accounts: { eventType: string }[] }).accounts[0]!.eventType).toBe(
      'UPDATED',
    );
  });

  test('scripted consent: failure status, never-answering bank, duplicates, removed accounts', async () => {
    await start();
    sbx.control.setConsent('c-script', {
      operatingAccounts: ['OP-1'],
      banks: [
        {
          bankCode: 'AAA',
          bankName: 'A Bank',
          accounts: ['a1', { accountId: 'a2', eventType: 'REMOVED' }],
          delayMs: 5,
        },
        { bankCode: 'BBB', bankName: 'B Bank', accounts: ['b1'], taskStatus: 'FAILED', delayMs: 10 },
        { bankCode: 'CCC', bankName: 'C Bank', accounts: ['c1'], neverAnswers: true },
      ],
      duplicateEvents: 2,
    });
    const { body } = await refresh('c-script');
    await waitFor(() => receiver.received.length === 4, 'two banks twice');
    const byBank = (code: string) =>
      receiver.received.filter((r) => (r.body as { bankCode: string }).bankCode === code);
    expect(byBank('AAA')).toHaveLength(2);
    expect(byBank('BBB')).toHaveLength(2);
    expect(byBank('CCC')).toHaveLength(0);
    expect(byBank('AAA')[0]!.body).toMatchObject({
      taskId: body.taskId,
      accounts: [
        { accountId: 'a1', eventType: 'ADDED' },
        { accountId: 'a2', eventType: 'REMOVED' },
      ],
    });
    expect(byBank('BBB')[0]!.body).toMatchObject({ taskStatus: 'FAILED' });
    const task = sbx.control.refreshTasks()[0]!;
    expect(task.banks.find((b) => b.bankCode === 'CCC')!.neverAnswers).toBe(true);
    expect(task.events).toHaveLength(4);
    expect(task.events.map((e) => e.copy).sort()).toEqual([1, 1, 2, 2]);
  });

  test('shuffle delivers in the reverse of the natural order; eventBeforeResponse sends before the 202', async () => {
    await start();
    const banks = [
      { bankCode: 'B1', bankName: 'One', accounts: ['1'], delayMs: 1 },
      { bankCode: 'B2', bankName: 'Two', accounts: ['2'], delayMs: 2 },
      { bankCode: 'B3', bankName: 'Three', accounts: ['3'], delayMs: 3 },
    ];
    sbx.control.setConsent('shuffled', { banks, shuffle: true });
    await refresh('shuffled');
    await waitFor(() => receiver.received.length === 3, 'three events');
    expect(receiver.received.map((r) => (r.body as { bankCode: string }).bankCode)).toEqual(['B3', 'B2', 'B1']);

    receiver.received.length = 0;
    sbx.control.setConsent('early', { banks: banks.map((b) => ({ ...b, delayMs: 5_000 })), eventBeforeResponse: true });
    const res = await refresh('early');
    expect(res.status).toBe(202);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.body).toMatchObject({ taskId: res.body.taskId, bankCode: 'B1' });
  });

  test('account webhooks are retried with backoff', async () => {
    await start();
    receiver.answers = [500, 429];
    const delivery = await sbx.control.sendAccountEvent({
      consentId: 'c',
      taskId: 'stale-task',
      taskStatus: 'FINISHED',
      bankCode: 'X',
      bankName: 'X',
      accounts: [],
    });
    expect(delivery.outcome).toBe('delivered');
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 429, 200]);
    expect(receiver.received.map((r) => (r.body as { taskId: string }).taskId)).toEqual([
      'stale-task',
      'stale-task',
      'stale-task',
    ]);
    expect(receiver.received.every((r) => r.headers.authorization === HEADER)).toBe(true);
  });

  test('transactionEvents for the operating accounts, on demand and spontaneously', async () => {
    await start({ transactionEvents: { everyMs: 20 } });
    sbx.control.setConsent('tx', { operatingAccounts: ['OP-1', 'OP-2'] });
    await sbx.control.emitTransactionEvents('tx', { count: 3, withinMs: 20 });
    await sbx.control.emitTransactionEvents('tx', { accountIds: ['OP-2'] });
    await waitFor(() => receiver.received.length >= 5, 'events');
    const sent = sbx.control.accountWebhooksSent();
    expect(sent.every((w) => w.kind === 'transactionEvent')).toBe(true);
    expect(sent.filter((w) => w.trigger === 'transactions').map((w) => w.body)).toEqual([
      ...Array(3).fill({ consentId: 'tx', eventType: 'NEW', accounts: [{ accountId: 'OP-1' }, { accountId: 'OP-2' }] }),
      { consentId: 'tx', eventType: 'NEW', accounts: [{ accountId: 'OP-2' }] },
    ]);
    // The timer picks a known consent and one of its operating accounts.
    await waitFor(
      () => sbx.control.accountWebhooksSent().some((w) => w.trigger === 'spontaneous'),
      'spontaneous event',
    );
    const spontaneous = sbx.control.accountWebhooksSent().find((w) => w.trigger === 'spontaneous')!;
    expect(spontaneous.body).toEqual({
      consentId: 'tx',
      eventType: 'NEW',
      accounts: [{ accountId: expect.stringMatching(/^OP-[12]$/) }],
    });
  });

  test("activation 'next-full-hour': events before the next full hour are recorded inactive, not sent", async () => {
    let now = Date.UTC(2030, 0, 1, 10, 31, 0);
    await start((receiverUrl) => ({
      clock: () => now,
      accountWebhook: { endpoint: `${receiverUrl}/wh`, securityHeader: HEADER },
    }));
    expect(sbx.control.accountWebhookActiveFrom()).toBe('2030-01-01T11:00:00.000Z');
    sbx.control.setConsent('c', { banks: [{ bankCode: 'B', bankName: 'B', accounts: ['1'], delayMs: 0 }] });
    await refresh('c');
    await sbx.control.emitTransactionEvents('c');
    await waitFor(() => sbx.control.accountWebhooksSent().length === 2, 'two events');
    expect(
      sbx.control
        .accountWebhooksSent()
        .map((w) => `${w.kind}:${w.outcome}`)
        .sort(),
    ).toEqual(['accountEvent:inactive', 'transactionEvent:inactive']);
    now = Date.UTC(2030, 0, 1, 10, 59, 59, 999);
    await sbx.control.emitTransactionEvents('c');
    now = Date.UTC(2030, 0, 1, 11, 0, 0);
    await sbx.control.emitTransactionEvents('c');
    await waitFor(() => receiver.received.length === 1, 'the active one');
    expect(sbx.control.accountWebhooksSent().map((w) => w.outcome)).toEqual([
      'inactive',
      'inactive',
      'inactive',
      expect.stringMatching(/pending|delivered/),
    ]);
    expect(receiver.received[0]!.headers.authorization).toBe(HEADER);
  });

  test('without an endpoint events are recorded as no-endpoint; invalid settings are refused', async () => {
    await start({ accountWebhook: {} });
    await refresh('c');
    await waitFor(() => sbx.control.accountWebhooksSent().length === sbx.control.consent('c').banks.length, 'events');
    expect(new Set(sbx.control.accountWebhooksSent().map((w) => w.outcome))).toEqual(new Set(['no-endpoint']));
    expect(sbx.control.accountWebhookActiveFrom()).toBeNull();
    expect(() => sbx.control.setAccountWebhook({ endpoint: `${receiver.url}/wh?x=1` })).toThrow(/parameters/);
    expect(() => sbx.control.setAccountWebhook({ endpoint: 'not a url' })).toThrow(/absolute/);
    expect(() => sbx.control.setAccountWebhook({ securityHeader: 'Bearer: x' })).toThrow(/securityHeader/);
    await expect(sandbox({ accountWebhook: { endpoint: 'http://127.0.0.1:1/wh?hash=1' } })).rejects.toThrow(
      /parameters/,
    );
    await expect(sandbox({ accountWebhook: { securityHeader: 'tab\tx' } })).rejects.toThrow(/securityHeader/);
  });

  test('per-run webhook faults also apply to account webhooks', async () => {
    await start({ webhookFaults: { drop: true } });
    await sbx.control.emitTransactionEvents('c');
    expect(sbx.control.accountWebhooksSent().map((w) => w.outcome)).toEqual(['dropped']);
    sbx.control.setWebhookFaults({ duplicate: 2 });
    await sbx.control.emitTransactionEvents('c');
    await waitFor(() => receiver.received.length === 2, 'two copies');
  });
});
