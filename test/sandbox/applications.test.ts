import type { RunningSandbox } from '../../src/sandbox';
import { api, sandbox, sleep, startReceiver, token, waitFor, type Receiver } from './helpers';

const fast = {
  steps: [
    { status: 'IN_PROGRESS', afterMs: 5 },
    { status: 'APPROVED', afterMs: 5 },
    { status: 'COMPLETED', afterMs: 5 },
  ],
};

describe('sandbox finance applications', () => {
  let sbx: RunningSandbox;
  let receiver: Receiver;
  let t: string;
  beforeEach(async () => {
    sbx = await sandbox();
    receiver = await startReceiver();
    t = await token(sbx.url);
  });
  afterEach(async () => {
    await sbx.close();
    await receiver.close();
  });

  const create = (body: unknown) => api(sbx.url, t, 'POST', '/applications', body);

  test('validates the create request', async () => {
    const notJson = await fetch(`${sbx.url}/applications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'text/plain' },
      body: 'redirectUrl=x',
    });
    expect(notJson.status).toBe(415);
    expect(((await notJson.json()) as { error: string }).error).toBe('unsupported_media_type');
    const malformed = await fetch(`${sbx.url}/applications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: '{"redirectUrl":',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: string }).error).toBe('invalid_request');
    for (const body of [
      {},
      [],
      { redirectUrl: '/relative' },
      { redirectUrl: 'ftp://m.example/r' },
      { redirectUrl: 42 },
      { redirectUrl: 'https://m.example/r', webhookUrl: 'not a url' },
      { redirectUrl: 'https://m.example/r', webhookUrl: null },
    ]) {
      const res = await create(body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String) });
    }
    expect(sbx.control.applications()).toEqual([]);
  });

  test('creates, then advances along the script; status reads follow; unknown id is 404', async () => {
    sbx.control.setApplicationScript(fast);
    const res = await create({ redirectUrl: 'https://m.example/r', merchantReference: 'r1' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      financeApplicationId: expect.any(String),
      status: 'CREATED',
      createdAt: expect.any(String),
      redirectUrl: 'https://m.example/r',
    });
    const id = res.body.financeApplicationId as string;
    await waitFor(() => sbx.control.application(id)?.status === 'COMPLETED', 'COMPLETED');
    const status = await api(sbx.url, t, 'GET', `/applications/${id}/status`);
    expect(status.status).toBe(200);
    expect(status.body).toEqual({ financeApplicationId: id, status: 'COMPLETED', updatedAt: expect.any(String) });
    const record = sbx.control.application(id)!;
    expect(record.statusHistory.map((s) => s.status)).toEqual(['CREATED', 'IN_PROGRESS', 'APPROVED', 'COMPLETED']);
    expect(record.createRequest).toEqual({ redirectUrl: 'https://m.example/r', merchantReference: 'r1' });
    expect(record.webhooks).toEqual([]);
    expect((await api(sbx.url, t, 'GET', '/applications/nope/status')).status).toBe(404);
  });

  test('the default script runs CREATED → IN_PROGRESS → APPROVED → SIGNED → COMPLETED', async () => {
    const res = await create({ redirectUrl: 'https://m.example/r' });
    const id = res.body.financeApplicationId as string;
    await waitFor(() => sbx.control.application(id)?.status === 'COMPLETED', 'COMPLETED');
    expect(sbx.control.application(id)!.statusHistory.map((s) => s.status)).toEqual([
      'CREATED',
      'IN_PROGRESS',
      'APPROVED',
      'SIGNED',
      'COMPLETED',
    ]);
  });

  test('scripts match on the create body; the newest matching rule wins', async () => {
    sbx.control.setApplicationScript(fast);
    sbx.control.setApplicationScript(
      { steps: [{ status: 'DECLINED', afterMs: 5 }] },
      { merchantReference: 'declined' },
    );
    sbx.control.setApplicationScript(
      { steps: [{ status: 'EXPIRED', afterMs: 5 }] },
      (body) => body.merchantReference === 'old',
    );
    const ids: string[] = [];
    for (const merchantReference of ['declined', 'old', 'other']) {
      ids.push((await create({ redirectUrl: 'https://m.example/r', merchantReference })).body.financeApplicationId);
    }
    await waitFor(
      () => ids.every((id) => ['DECLINED', 'EXPIRED', 'COMPLETED'].includes(sbx.control.application(id)!.status)),
      'terminal statuses',
    );
    expect(ids.map((id) => sbx.control.application(id)!.status)).toEqual(['DECLINED', 'EXPIRED', 'COMPLETED']);
  });

  test('sends one webhook per status change (none for creation) to the webhookUrl exactly as given', async () => {
    sbx.control.setApplicationScript(fast);
    const hashPath = `${receiver.url}/webhooks/finance-applications/ref-1/aB3-_x%2Fz=`;
    const hashQuery = `${receiver.url}/webhooks/finance-applications/ref-2?hash=aB3-_x%2Bz%3D&x=1`;
    const a = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: hashPath })).body;
    expect(a.webhookUrl).toBe(hashPath);
    const b = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: hashQuery })).body;
    await waitFor(() => receiver.received.length === 6, '6 webhooks');
    const forA = receiver.received.filter((r) => r.url === '/webhooks/finance-applications/ref-1/aB3-_x%2Fz=');
    const forB = receiver.received.filter(
      (r) => r.url === '/webhooks/finance-applications/ref-2?hash=aB3-_x%2Bz%3D&x=1',
    );
    expect(forA).toHaveLength(3);
    expect(forB).toHaveLength(3);
    for (const r of forA) {
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers.authorization).toBeUndefined();
      expect(r.body).toEqual({ financeApplicationId: a.financeApplicationId });
    }
    expect(forB[0]!.body).toEqual({ financeApplicationId: b.financeApplicationId });
    await waitFor(() =>
      sbx.control.application(a.financeApplicationId)!.webhooks.every((w) => w.outcome === 'delivered'),
    );
    const record = sbx.control.application(a.financeApplicationId)!;
    expect(record.webhooks.map((w) => [w.trigger, w.url, w.outcome, w.attempts.length, w.attempts[0]!.status])).toEqual(
      [
        ['status:IN_PROGRESS', hashPath, 'delivered', 1, 200],
        ['status:APPROVED', hashPath, 'delivered', 1, 200],
        ['status:COMPLETED', hashPath, 'delivered', 1, 200],
      ],
    );
  });

  test('retries with backoff on 5xx, on a connection error and on a timeout, up to the attempts', async () => {
    sbx.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 0 }] });
    receiver.answers = [500, 503, 'hang'];
    const id = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: `${receiver.url}/wh` })).body
      .financeApplicationId as string;
    const delivered = await waitFor(() => {
      const w = sbx.control.application(id)!.webhooks[0];
      return w?.outcome === 'delivered' ? w : undefined;
    }, 'delivery');
    expect(delivered.attempts.map((a) => a.status)).toEqual([500, 503, null, 200]);
    expect(delivered.attempts[2]!.error).toEqual(expect.any(String));
    expect(receiver.received).toHaveLength(4);

    // A receiver that is gone: every attempt fails, then the delivery is 'failed'.
    const gone = `${receiver.url}/gone`;
    await receiver.close();
    const id2 = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: gone })).body
      .financeApplicationId as string;
    const failed = await waitFor(() => {
      const w = sbx.control.application(id2)!.webhooks[0];
      return w?.outcome === 'failed' ? w : undefined;
    }, 'failure');
    expect(failed.attempts).toHaveLength(4);
    expect(failed.attempts.every((a) => a.status === null && typeof a.error === 'string')).toBe(true);
    receiver = await startReceiver();
  });

  test('fault switches: drop, duplicate, delay', async () => {
    sbx.control.setApplicationScript(
      {
        steps: [
          { status: 'IN_PROGRESS', afterMs: 0 },
          { status: 'APPROVED', afterMs: 5, dropWebhook: true },
        ],
      },
      { merchantReference: 'drop-one' },
    );
    sbx.control.setApplicationScript({ ...fast, webhooks: { drop: true } }, { merchantReference: 'drop' });
    sbx.control.setApplicationScript(
      { steps: [{ status: 'IN_PROGRESS', afterMs: 0 }], webhooks: { duplicate: 3, delayMs: 30 } },
      { merchantReference: 'dup' },
    );
    const mk = async (merchantReference: string) =>
      (
        await create({
          redirectUrl: 'https://m.example/r',
          webhookUrl: `${receiver.url}/${merchantReference}`,
          merchantReference,
        })
      ).body.financeApplicationId as string;
    const dropOne = await mk('drop-one');
    const drop = await mk('drop');
    const dup = await mk('dup');
    await waitFor(() => sbx.control.application(drop)!.status === 'COMPLETED');
    await waitFor(() => sbx.control.application(dropOne)!.status === 'APPROVED');
    await waitFor(() => receiver.received.filter((r) => r.url === '/dup').length === 3, 'three copies');
    expect(sbx.control.application(drop)!.webhooks.map((w) => w.outcome)).toEqual(['dropped', 'dropped', 'dropped']);
    expect(sbx.control.application(dropOne)!.webhooks.map((w) => [w.trigger, w.outcome])).toEqual([
      ['status:IN_PROGRESS', expect.stringMatching(/pending|delivered/)],
      ['status:APPROVED', 'dropped'],
    ]);
    expect(receiver.received.filter((r) => r.url === '/drop')).toHaveLength(0);
    expect(receiver.received.filter((r) => r.url === '/drop-one')).toHaveLength(1);
    const copies = sbx.control.application(dup)!.webhooks;
    expect(copies.map((w) => w.copy)).toEqual([1, 2, 3]);
    // The delay is observable as the first attempt starting after the webhook was created (no timing asserted).
    expect(copies.every((w) => w.attempts.length >= 1)).toBe(true);
  });

  test('delay: the webhook waits before its first attempt', async () => {
    sbx.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 0 }], webhooks: { delayMs: 60_000 } });
    const id = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: `${receiver.url}/wh` })).body
      .financeApplicationId as string;
    await waitFor(() => sbx.control.application(id)!.status === 'IN_PROGRESS', 'IN_PROGRESS');
    await sleep(50);
    expect(sbx.control.application(id)!.webhooks.map((w) => [w.outcome, w.attempts.length])).toEqual([['pending', 0]]);
    expect(receiver.received).toHaveLength(0);
  });

  test('the Webhook Security Header, when set, is sent as Authorization on these webhooks too', async () => {
    const withHeader = await sandbox({ accountWebhook: { securityHeader: 'abc 123=' } });
    try {
      withHeader.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 0 }] });
      await api(withHeader.url, await token(withHeader.url), 'POST', '/applications', {
        redirectUrl: 'https://m.example/r',
        webhookUrl: `${receiver.url}/wh/h`,
      });
      await waitFor(() => receiver.received.length === 1, 'webhook');
      expect(receiver.received[0]!.headers.authorization).toBe('abc 123=');
    } finally {
      await withHeader.close();
    }
  });

  test('reorder: webhooks are held and delivered newest first after the last step', async () => {
    sbx.control.setApplicationScript({ ...fast, webhooks: { reorder: true } });
    const id = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: `${receiver.url}/wh` })).body
      .financeApplicationId as string;
    await waitFor(() => receiver.received.length === 3, 'three webhooks');
    const record = sbx.control.application(id)!;
    expect(record.status).toBe('COMPLETED');
    const completedAt = record.statusHistory.at(-1)!.at;
    // Nothing was sent before the last status: every webhook arrives when COMPLETED is already readable.
    expect(record.webhooks.every((w) => w.attempts[0]!.at >= completedAt)).toBe(true);
    expect(record.webhooks.map((w) => w.trigger)).toEqual([
      'status:IN_PROGRESS',
      'status:APPROVED',
      'status:COMPLETED',
    ]);
  });

  test('beforeCreateResponse: the first webhook reaches the receiver before the 201 is written', async () => {
    sbx.control.setApplicationScript({
      steps: [{ status: 'IN_PROGRESS', afterMs: 10_000 }],
      webhooks: { beforeCreateResponse: true },
    });
    const res = await create({ redirectUrl: 'https://m.example/r', webhookUrl: `${receiver.url}/wh` });
    expect(res.status).toBe(201);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.body).toEqual({ financeApplicationId: res.body.financeApplicationId });
    expect(sbx.control.application(res.body.financeApplicationId)!.status).toBe('IN_PROGRESS');
  });

  test('control: a burst of identical webhooks, a manual status change and per-run webhook faults', async () => {
    sbx.control.setApplicationScript({ steps: [] });
    const id = (await create({ redirectUrl: 'https://m.example/r', webhookUrl: `${receiver.url}/wh?hash=h` })).body
      .financeApplicationId as string;
    const burst = await sbx.control.sendApplicationWebhooks(id, 5);
    expect(burst.map((w) => w.outcome)).toEqual(Array(5).fill('delivered'));
    expect(receiver.received.map((r) => [r.url, r.body])).toEqual(
      Array(5).fill(['/wh?hash=h', { financeApplicationId: id }]),
    );
    sbx.control.setApplicationStatus(id, 'CANCELLED');
    await waitFor(() => receiver.received.length === 6, 'status webhook');
    expect(sbx.control.application(id)!.status).toBe('CANCELLED');
    expect(() => sbx.control.setApplicationStatus('nope', 'CANCELLED')).toThrow(/unknown/);

    sbx.control.setWebhookFaults({ drop: true });
    sbx.control.setApplicationStatus(id, 'EXPIRED');
    expect(sbx.control.application(id)!.webhooks.at(-1)!.outcome).toBe('dropped');
    sbx.control.setWebhookFaults({ duplicate: 2 });
    sbx.control.setApplicationStatus(id, 'COMPLETED');
    await waitFor(() => receiver.received.length === 8, 'duplicated status webhook');
  });

  test('reset forgets applications, scripts and calls and stops lifecycles', async () => {
    sbx.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 60_000 }] });
    await create({ redirectUrl: 'https://m.example/r', webhookUrl: `${receiver.url}/wh` });
    sbx.control.reset();
    expect(sbx.control.applications()).toEqual([]);
    expect(sbx.control.apiCalls()).toEqual([]);
    expect(sbx.control.tokenRequestCount()).toBe(0);
    // The token issued before the reset still works.
    expect((await create({ redirectUrl: 'https://m.example/r' })).status).toBe(201);
    expect(sbx.control.applications()[0]!.script.steps).toHaveLength(4);
  });
});
