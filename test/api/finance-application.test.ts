/**
 * Facade and receiver on the whole stack: real dev server, the bank sandbox over HTTP, real activities and
 * worker, the real Express app. Scenarios with webhook faults are in finance-application-scenarios.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { awaitFinanceApplication } from '../../src/client/finance-applications';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { financeApplicationStateQuery } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId, webhookKey } from '../../src/shared/ids';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/** With RECORD_HISTORIES=1, saves the workflow's history for the replay test (test/helpers/histories.ts). */
async function recordHistory(client: Client, ref: string, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  recordFinanceHistory(
    await client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref)).fetchHistory(),
    name,
  );
}

describe('finance applications: facade and webhook receiver (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  // Every answer of both listeners in this file (2xx and 4xx alike) must match the OpenAPI document.
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await stack?.close();
  });

  /** The bank's side: the public listener; `/applications…` go to the facade on the internal one, with the key. */
  const post = (
    path: string,
    body: unknown,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ) => {
    const init = { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) };
    return path.startsWith('/webhooks/') ? fetch(`${stack.publicUrl}${path}`, init) : stack.facade(path, init);
  };
  /** The webhook URL's key and hash of the stack merchant's application (the form issued since tenancy). */
  const keyOf = (ref: string) => webhookKey(TEST_MERCHANT, ref);
  const hashOf = (ref: string, secret = stack.webhooks.hashSecret) => tenantWebhookHash(secret, TEST_MERCHANT, ref);
  const webhookPath = (ref: string) => `/webhooks/finance-applications/${keyOf(ref)}/${hashOf(ref)}`;

  it('happy path: two POSTs with one reference make one application; webhooks record every sandbox status once, in order', async () => {
    const ref = `api-${randomUUID()}`;
    // Statuses two seconds apart: each webhook's read has time to see its status even on a loaded machine (one
    // second was seen to merge two webhooks into one read at load ≈ 20; this test is about recording every status
    // once and in order; latency is measured by `npm run bench`).
    stack.sandbox.control.setApplicationScript(
      { steps: ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'].map((status) => ({ status, afterMs: 2_000 })) },
      { merchantReference: ref },
    );
    // The merchant's callback endpoint: records each pushed event with its Idempotency-Key.
    const pushed: { key: string; event: { status: string; financeApplicationId: string } }[] = [];
    const merchant = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        // The Standard Webhooks payload: the event is its `data`.
        pushed.push({ key: String(req.headers['idempotency-key']), event: (JSON.parse(body) as { data: never }).data });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => merchant.listen(0, '127.0.0.1', resolve));
    const callbackUrl = `http://127.0.0.1:${(merchant.address() as AddressInfo).port}/paylater-events`;
    const request = {
      merchantReference: ref,
      redirectUrl: 'https://shop.example/done',
      amount: { value: 120, currency: 'EUR' },
      callbackUrl,
    };
    const [a, b] = await Promise.all([post('/applications', request), post('/applications', request)]);
    expect([a.status, b.status].sort()).toEqual([200, 201]);
    const [bodyA, bodyB] = (await Promise.all([a.json(), b.json()])) as Record<string, unknown>[];
    expect(bodyA).toEqual(bodyB);
    const id = bodyA!.financeApplicationId as string;
    expect(bodyA).toEqual({
      merchantReference: ref,
      workflowId: financeApplicationWorkflowId(TEST_MERCHANT, ref),
      financeApplicationId: id,
      bank: expect.objectContaining({ financeApplicationId: id }),
    });

    // One application at the bank, created with our hashed webhookUrl and the merchant's other fields.
    const atBank = stack.sandbox.control.applications().filter((app) => app.createRequest.merchantReference === ref);
    expect(atBank).toHaveLength(1);
    expect(atBank[0]!.createRequest).toMatchObject({
      redirectUrl: 'https://shop.example/done',
      amount: { value: 120, currency: 'EUR' },
      webhookUrl: `${stack.publicUrl}${webhookPath(ref)}`,
    });

    const final = await eventually(async () => {
      const res = await stack.facade(`/applications/${ref}`);
      const body = (await res.json()) as {
        done: boolean;
        status: string;
        phase: string;
        history: { status: string; source: string }[];
      };
      return body.done ? body : undefined;
    });
    const truth = stack.sandbox.control.application(id)!;
    expect(final.status).toBe(truth.status);
    expect(final.history.map((h) => h.status)).toEqual(truth.statusHistory.map((s) => s.status));
    expect(final.history.map((h) => h.source)).toEqual(['create', 'webhook', 'webhook', 'webhook', 'webhook']);
    expect(Object.keys(final).sort()).toEqual([
      'done',
      'financeApplicationId',
      'history',
      'merchantReference',
      'phase',
      'status',
    ]);
    // Done: past following (its callbacks may still be on their way).
    expect(['notifying', 'closed']).toContain(final.phase);
    expect(atBank[0]!.createRequest).not.toHaveProperty('callbackUrl');

    // Each change pushed to the merchant once, in order, with a distinct idempotency key.
    await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    expect(pushed.map((p) => p.event.status)).toEqual(truth.statusHistory.map((s) => s.status));
    expect(new Set(pushed.map((p) => p.key)).size).toBe(pushed.length);
    expect(pushed.every((p) => p.event.financeApplicationId === id)).toBe(true);
    await new Promise((resolve) => merchant.close(resolve));

    // After the end: the same reference is still the same application (200), and the bank saw one POST.
    const again = await post('/applications', request);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ financeApplicationId: id });
    expect(
      stack.sandbox.control.applications().filter((app) => app.createRequest.merchantReference === ref),
    ).toHaveLength(1);
    await recordHistory(stack.t.client, ref, 'webhooks');
  });

  it("the create answer never carries the bank's echo of our webhookUrl (its hash lets anyone post status webhooks)", async () => {
    const ref = `nohook-${randomUUID()}`;
    const hash = hashOf(ref);
    const res = await post('/applications', { merchantReference: ref, redirectUrl: 'https://shop.example/done' });
    expect(res.status).toBe(201);
    const text = await res.text();
    const body = JSON.parse(text) as { financeApplicationId: string; bank: Record<string, unknown> };
    // The bank did get it (and the sandbox echoes it in its create answer: src/sandbox/routes/bank.ts)...
    const atBank = stack.sandbox.control.application(body.financeApplicationId)!;
    expect(atBank.createRequest.webhookUrl).toContain(hash);
    // ...but neither the answer nor anything a merchant reads carries it.
    expect(body.bank).toMatchObject({ financeApplicationId: body.financeApplicationId, status: 'CREATED' });
    expect(text).not.toMatch(/webhook/i);
    expect(text).not.toContain(hash);
    const again = await post('/applications', { merchantReference: ref, redirectUrl: 'https://shop.example/done' });
    expect(again.status).toBe(200);
    expect(await again.text()).not.toContain(hash);
    // At the source: the create activity's result in the history, hence the workflow's state, holds no hash either.
    const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref));
    expect(JSON.stringify(await handle.query(financeApplicationStateQuery))).not.toContain(hash);
    const history = await handle.fetchHistory();
    const completed = (history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes);
    expect(completed.length).toBeGreaterThan(0);
    const decoded = await Promise.all(
      completed.map((e) => stack.payloadCodec.decode(e.activityTaskCompletedEventAttributes!.result!.payloads!)),
    );
    for (const payloads of decoded)
      for (const p of payloads) expect(Buffer.from(p.data ?? []).toString('utf8')).not.toContain(hash);
  });

  it('answers the facade errors: 400 invalid body, 415 not JSON, 404 unknown reference', async () => {
    expect(
      (await post('/applications', { merchantReference: 'bad ref', redirectUrl: 'https://x.example' })).status,
    ).toBe(400);
    expect((await post('/applications', { merchantReference: 'ok-ref' })).status).toBe(400);
    expect((await post('/applications', 'merchantReference=x', { 'content-type': 'text/plain' })).status).toBe(415);
    const unknown = await stack.facade(`/applications/never-${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: 'not_found' });
  });

  it('receiver: bad hash, wrong content type, malformed and oversized bodies get 4xx and never reach the workflow', async () => {
    const ref = `rcv-${randomUUID()}`;
    // A lifecycle that never moves: every signal in the history below comes from this test's requests.
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const created = await post('/applications', { merchantReference: ref, redirectUrl: 'https://shop.example/done' });
    const { financeApplicationId } = (await created.json()) as { financeApplicationId: string };
    const good = JSON.stringify({ financeApplicationId });
    const json = { 'content-type': 'application/json' };

    const rejected: [number, Response][] = [
      [401, await post(`/webhooks/finance-applications/${keyOf(ref)}/forged-hash`, good, json)],
      [401, await post(`/webhooks/finance-applications/${keyOf(ref)}?hash=forged`, good, json)],
      [401, await post(`/webhooks/finance-applications/${keyOf(ref)}`, good, json)],
      [401, await post(`/webhooks/finance-applications/${keyOf(ref)}/${hashOf(`x${ref}`)}`, good, json)],
      [401, await post(`/webhooks/finance-applications/${keyOf(ref)}/${hashOf(ref, 'another-secret')}`, good, json)],
      [415, await post(webhookPath(ref), good, { 'content-type': 'text/plain' })],
      [400, await post(webhookPath(ref), '{"financeApplicationId":', json)],
      [400, await post(webhookPath(ref), { financeApplicationId: 42 }, json)],
      [400, await post(webhookPath(ref), { somethingElse: 'x' }, json)],
      // Ids are 1-128 visible ASCII characters: no control characters, no spaces, nothing longer.
      [400, await post(webhookPath(ref), { financeApplicationId: `${financeApplicationId}\u0000` }, json)],
      [400, await post(webhookPath(ref), { financeApplicationId: 'fa\r\nX-Forged: 1' }, json)],
      [400, await post(webhookPath(ref), { financeApplicationId: 'two words' }, json)],
      [400, await post(webhookPath(ref), { financeApplicationId: 'f'.repeat(129) }, json)],
      [413, await post(webhookPath(ref), { financeApplicationId, padding: 'x'.repeat(64 * 1024) }, json)],
    ];
    for (const [status, res] of rejected) {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(await res.json()).toMatchObject({ message: expect.any(String) });
    }

    const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref));
    const signalEvents = async () =>
      ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
    expect(await signalEvents()).toBe(0);

    // The accepted forms: hash as last path segment and as ?hash=; a foreign id is signalled, then ignored.
    expect((await post(webhookPath(ref), good, json)).status).toBe(202);
    expect(
      (await post(`/webhooks/finance-applications/${keyOf(ref)}?hash=${encodeURIComponent(hashOf(ref))}`, good, json))
        .status,
    ).toBe(202);
    expect((await post(webhookPath(ref), { financeApplicationId: 'not-this-one' }, json)).status).toBe(202);
    // Signals sent while a workflow task runs are written after it: wait, then require exactly the three.
    await eventually(async () => ((await signalEvents()) >= 3 ? true : undefined));
    const state = await eventually(async () => {
      const s = await handle.query(financeApplicationStateQuery);
      return s.mismatchedWebhooks === 1 && s.webhooksLive ? s : undefined;
    });
    expect(state.webhooksReceived).toBe(3);
    expect(await signalEvents()).toBe(3);
    expect(state.history.map((h) => h.status)).toEqual(['CREATED']);

    // A closed or unknown workflow: acknowledged so the bank stops retrying, and counted.
    const stranger = `unknown-${randomUUID()}`;
    const ignored = await post(webhookPath(stranger), good, json);
    expect(ignored.status).toBe(200);
    expect(await ignored.json()).toMatchObject({ status: 'ignored' });

    const metrics = await (
      await fetch(`${stack.internalUrl}/metrics`, { headers: { authorization: `Bearer ${stack.operatorKey}` } })
    ).text();
    for (const outcome of [
      'accepted',
      'rejected_hash',
      'rejected_content_type',
      'rejected_body',
      'too_large',
      'no_target',
    ]) {
      expect(metrics).toMatch(
        new RegExp(`paylater_bank_webhooks_total\\{kind="financeApplication",outcome="${outcome}"\\} [1-9]`),
      );
    }
    await handle.terminate('test done');
  });
});
