import type { RunningSandbox } from '../../src/sandbox';
import { api, sandbox, startReceiver, token, waitFor, type Receiver } from './helpers';

/** The same control over HTTP, for other processes. */
describe('sandbox control over HTTP', () => {
  let sbx: RunningSandbox;
  let receiver: Receiver;
  let t: string;
  beforeEach(async () => {
    receiver = await startReceiver();
    sbx = await sandbox({ accountWebhook: { endpoint: `${receiver.url}/accounts`, activation: 'immediate' } });
    t = await token(sbx.url);
  });
  afterEach(async () => {
    await sbx.close();
    await receiver.close();
  });

  const control = async (method: string, path: string, body?: unknown) =>
    api(sbx.url, null, method, `/_sandbox${path}`, body);

  test('scripts, applications, status changes and bursts', async () => {
    const rule = await control('POST', '/application-scripts', {
      script: { steps: [{ status: 'DECLINED', afterMs: 1 }] },
      match: { merchantReference: 'm1' },
    });
    expect(rule.status).toBe(201);
    expect(rule.body.ruleId).toEqual(expect.any(String));
    expect(
      (await control('POST', '/application-scripts', { script: { steps: [{ status: '', afterMs: -1 }] } })).status,
    ).toBe(400);

    const created = await api(sbx.url, t, 'POST', '/applications', {
      redirectUrl: 'https://m.example/r',
      webhookUrl: `${receiver.url}/fa/m1/hash`,
      merchantReference: 'm1',
    });
    const id = created.body.financeApplicationId as string;
    await waitFor(() => receiver.received.length === 1, 'DECLINED webhook');
    const record = await control('GET', `/applications/${id}`);
    expect(record.body).toMatchObject({
      financeApplicationId: id,
      status: 'DECLINED',
      createRequest: { merchantReference: 'm1' },
    });
    expect((await control('GET', '/applications')).body).toHaveLength(1);
    expect((await control('GET', '/applications/nope')).status).toBe(404);

    expect((await control('POST', `/applications/${id}/webhooks`, { count: 3 })).status).toBe(202);
    await waitFor(() => receiver.received.length === 4, 'burst');
    expect((await control('POST', `/applications/${id}/status`, { status: 'CANCELLED' })).status).toBe(204);
    expect((await api(sbx.url, t, 'GET', `/applications/${id}/status`)).body.status).toBe('CANCELLED');
    expect((await control('DELETE', '/application-scripts')).status).toBe(204);
  });

  test('a script in another bank vocabulary: its own initial status, then its steps', async () => {
    const rule = await control('POST', '/application-scripts', {
      script: { initialStatus: 'RECEIVED', steps: [{ status: 'PAID_OUT', afterMs: 1 }] },
      match: { merchantReference: 'other-bank' },
    });
    expect(rule.status).toBe(201);
    const created = await api(sbx.url, t, 'POST', '/applications', {
      redirectUrl: 'https://m.example/r',
      merchantReference: 'other-bank',
    });
    const id = created.body.financeApplicationId as string;
    await waitFor(() => sbx.control.application(id)?.status === 'PAID_OUT', 'PAID_OUT');
    expect(sbx.control.application(id)!.statusHistory.map((h) => h.status)).toEqual(['RECEIVED', 'PAID_OUT']);
    expect((await control('POST', '/application-scripts', { script: { initialStatus: '', steps: [] } })).status).toBe(
      400,
    );
  });

  test('consents, events, faults, tokens, reads and reset', async () => {
    const setup = {
      operatingAccounts: ['OP-9'],
      banks: [{ bankCode: 'ZZ', bankName: 'Zed', accounts: ['z1'], delayMs: 1 }],
    };
    expect((await control('PUT', '/consents/c9', setup)).status).toBe(204);
    expect((await control('GET', '/consents/c9')).body).toMatchObject({ consentId: 'c9', operatingAccounts: ['OP-9'] });
    const task = await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c9' });
    await waitFor(() => receiver.received.length === 1, 'accountEvent');
    expect((await control('GET', '/refresh-tasks')).body[0]).toMatchObject({
      taskId: task.body.taskId,
      consentId: 'c9',
    });

    expect((await control('POST', '/consents/c9/transaction-events', { count: 2 })).status).toBe(202);
    expect((await control('POST', '/account-events', { consentId: 'c9', taskId: 'stale' })).status).toBe(202);
    await waitFor(() => receiver.received.length === 4, 'events');
    const sent = (await control('GET', '/account-webhooks')).body as { kind: string }[];
    expect(sent.map((w) => w.kind).sort()).toEqual([
      'accountEvent',
      'accountEvent',
      'transactionEvent',
      'transactionEvent',
    ]);

    expect((await control('PUT', '/webhook-faults', { drop: true })).status).toBe(204);
    await control('POST', '/consents/c9/transaction-events', {});
    await waitFor(() => sbx.control.accountWebhooksSent().at(-1)?.outcome === 'dropped', 'dropped');

    expect((await control('POST', '/api-faults', { route: 'refresh', kind: '429', retryAfterSeconds: 3 })).status).toBe(
      204,
    );
    expect((await control('POST', '/api-faults', { route: 'refresh', kind: 'boom' })).status).toBe(400);
    expect((await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c9' })).status).toBe(429);
    await control('POST', '/api-faults', { route: 'refresh', kind: '5xx' });
    expect((await control('DELETE', '/api-faults')).status).toBe(204);
    expect((await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c9' })).status).toBe(202);

    expect((await control('GET', '/token-requests')).body).toEqual({ count: 1 });
    const calls = (await control('GET', '/api-calls')).body as { route: string }[];
    expect(calls.map((c) => c.route)).toEqual(['token', 'refresh', 'refresh', 'refresh']);
    expect((await control('POST', '/revoke-tokens')).status).toBe(204);
    expect((await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c9' })).status).toBe(401);

    const activation = await control('PUT', '/account-webhook', {
      endpoint: `${receiver.url}/other`,
      activation: 'next-full-hour',
    });
    expect(activation.status).toBe(200);
    expect(Date.parse(activation.body.activeFrom as string) % 3_600_000).toBe(0);
    expect((await control('PUT', '/account-webhook', { endpoint: `${receiver.url}/x?y=1` })).status).toBe(400);

    expect((await control('POST', '/reset')).status).toBe(204);
    expect((await control('GET', '/refresh-tasks')).body).toEqual([]);
    expect((await control('GET', '/token-requests')).body).toEqual({ count: 0 });
  });

  test('GET /_sandbox lists every control route and the JSON Schema of each body; unknown body fields are refused', async () => {
    const index = await control('GET', '');
    expect(index.status).toBe(200);
    const { routes, bodies } = index.body as {
      routes: { route: string; body?: string }[];
      bodies: Record<string, { properties?: Record<string, { enum?: unknown[]; anyOf?: { enum?: unknown[] }[] }> }>;
    };
    expect(routes.map((r) => r.route)).toContain('POST /_sandbox/consents/:consentId/transaction-events');
    // Every body a route names by schema is in `bodies`.
    for (const { body } of routes) if (body && /^[A-Z]\w+$/.test(body)) expect(Object.keys(bodies)).toContain(body);
    expect(JSON.stringify(bodies.ApiFault)).toContain('createApplication');
    expect(Object.keys(bodies.TransactionEventsRequest!.properties ?? {})).toEqual(['count', 'accountIds', 'withinMs']);
    expect((await control('POST', '/consents/c1/transaction-events', { bogus: 1 })).status).toBe(400);
  });
});
