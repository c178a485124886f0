/**
 * Undelivered callbacks on the whole stack (docs/decisions/0049-undelivered-callbacks-ledger.md): two merchants whose
 * endpoints refuse (503) for a while, with a retry window of a few seconds in their MERCHANTS_FILE entries (time
 * compressed); each sees its own given-up callbacks only, one bulk resend delivers them once the endpoint answers,
 * a second sends none again, and each is in the audit trail.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryAuditLog } from '../../src/audit/audit-log';
import { awaitFinanceApplication } from '../../src/client/finance-applications';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { recordConsentHistory, recordFinanceHistory } from '../helpers/histories';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { callbackBulkResendWorkflowId, callbackLedgerWorkflowId } from '../../src/shared/undelivered-callbacks';

const KEY_A = 'shop-a-key-0123456789abcdef0123456789';
const KEY_B = 'shop-b-key-0123456789abcdef0123456789';

/** A merchant endpoint that answers 503 while `down`, else 200, and keeps each request with its answer. */
async function startEndpoint() {
  const received: { headers: IncomingHttpHeaders; status: number }[] = [];
  const state = { down: true };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const status = state.down ? 503 : 200;
      received.push({ headers: req.headers, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/hooks`,
    origin,
    received,
    state,
    /** webhook-ids of the requests answered 2xx. */
    delivered: () => received.filter((r) => r.status === 200).map((r) => String(r.headers['webhook-id'])),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Endpoint = Awaited<ReturnType<typeof startEndpoint>>;
interface Page {
  callbacks: { merchantId: string; idempotencyKey: string; type: string; state: string; merchantReference?: string }[];
  nextPageToken: string | null;
}
interface Progress {
  found: number;
  delivered: number;
  failed: number;
  done: boolean;
}

describe('undelivered callbacks: listed per merchant, given up after the retry window, sent again in bulk (whole stack)', () => {
  let stack: TestStack;
  let hooksA: Endpoint;
  let hooksB: Endpoint;
  const audit = new MemoryAuditLog();
  const started = new Date(Date.now() - 60_000).toISOString();
  beforeAll(async () => {
    hooksA = await startEndpoint();
    hooksB = await startEndpoint();
    stack = await startTestStack({
      audit,
      merchantApiKeys: [
        { name: 'shop-a', key: KEY_A },
        { name: 'shop-b', key: KEY_B },
      ],
      merchantsFile: {
        merchants: {
          'shop-a': {
            callbackAllowedOrigins: [hooksA.origin],
            callbackRetryWindow: '3s',
            callbackResendsPerMinute: 1_200,
          },
          'shop-b': { callbackAllowedOrigins: [hooksB.origin], callbackRetryWindow: '3s' },
        },
      },
      sandbox: { lifecycle: { stepMs: 200, statuses: ['CREATED', 'COMPLETED'] } },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await hooksA?.close();
    await hooksB?.close();
  });

  const as =
    (key: string) =>
    (path: string, init: RequestInit = {}) =>
      fetch(`${stack.internalUrl}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
      });
  const shopA = as(KEY_A);
  const shopB = as(KEY_B);
  const operator = () => as(stack.operatorKey);
  const list = async (call: ReturnType<typeof as>, query = ''): Promise<Page> => {
    const res = await call(`/callbacks/undelivered${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Page;
  };
  const create = async (call: ReturnType<typeof as>, ref: string, url: string) => {
    const res = await call('/applications', {
      method: 'POST',
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done', callbackUrl: url }),
    });
    expect(res.status).toBe(201);
  };

  const consoleGet = (path: string, cookie: string) =>
    fetch(`${stack.internalUrl}${path}`, { redirect: 'manual', headers: { cookie } });
  const consolePost = (path: string, form: Record<string, string>, cookie = '') =>
    fetch(`${stack.internalUrl}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
      body: new URLSearchParams(form).toString(),
    });
  async function signIn(key: string): Promise<{ cookie: string; csrf: string }> {
    const res = await consolePost('/console/sign-in', { key });
    expect(res.status).toBe(303);
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await consoleGet('/console/callbacks', cookie)).text();
    return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page)![1]! };
  }

  const refsA = [`a1-${randomUUID()}`, `a2-${randomUUID()}`];
  const refB = `b1-${randomUUID()}`;
  let range: { since: string; until: string };

  it('callbacks refused past the retry window are listed as given up, each merchant its own only', async () => {
    for (const ref of refsA) await create(shopA, ref, hooksA.url);
    await create(shopB, refB, hooksB.url);
    // While refused: listed (retrying, then given up).
    await eventually(async () => ((await list(shopA)).callbacks.length > 0 ? true : undefined), 60_000);

    for (const ref of refsA) await awaitFinanceApplication(stack.t.client, 'shop-a', ref);
    await awaitFinanceApplication(stack.t.client, 'shop-b', refB);
    const a = await eventually(async () => {
      const page = await list(shopA, '?state=given-up');
      return page.callbacks.length === 4 ? page : undefined; // CREATED and COMPLETED of two applications
    }, 60_000);
    expect(
      a.callbacks.every((c) => c.merchantId === 'shop-a' && c.idempotencyKey.startsWith('finance-application:shop-a:')),
    ).toBe(true);
    expect(new Set(a.callbacks.map((c) => c.merchantReference))).toEqual(new Set(refsA));
    expect(a.callbacks.every((c) => c.type === 'finance-application.status-changed')).toBe(true);
    const b = await eventually(async () => {
      const page = await list(shopB, '?state=given-up');
      return page.callbacks.length === 2 ? page : undefined;
    }, 60_000);
    // A merchant never sees another's: neither in its list nor by filtering.
    expect(b.callbacks.map((c) => c.merchantReference)).toEqual([refB, refB]);
    expect(JSON.stringify(a)).not.toContain(refB);
    expect(JSON.stringify(b)).not.toContain(refsA[0]);
    expect((await shopB('/callbacks/undelivered?merchant=shop-a')).status).toBe(400);
    // Filters: type, time, pages.
    expect((await list(shopA, '?type=consent.late-bank-report')).callbacks).toEqual([]);
    expect((await list(shopA, `?until=${encodeURIComponent(started)}`)).callbacks).toEqual([]);
    const first = await list(shopA, '?pageSize=3');
    expect(first.callbacks).toHaveLength(3);
    const second = await list(shopA, `?pageSize=3&pageToken=${first.nextPageToken}`);
    expect(second.callbacks).toHaveLength(1);
    expect(second.nextPageToken).toBeNull();
    // Given up: counted per merchant.
    const metrics = await stack.workerMetrics.registry.getSingleMetricAsString('paylater_callbacks_given_up_total');
    expect(metrics).toMatch(/merchant="shop-a"} 4/);
    expect(metrics).toMatch(/merchant="shop-b"} 2/);
    // Operators see every merchant's, or one's; a merchant's key there is refused.
    const all = (await (await operator()('/operator/callbacks/undelivered?state=given-up')).json()) as Page;
    expect(all.callbacks).toHaveLength(6);
    const onlyB = (await (await operator()('/operator/callbacks/undelivered?merchant=shop-b')).json()) as Page;
    expect(onlyB.callbacks.map((c) => c.merchantId)).toEqual(['shop-b', 'shop-b']);
    expect((await shopA('/operator/callbacks/undelivered')).status).toBe(401);

    // The console lists the signed-in merchant's own, never another's.
    const b1 = await signIn(KEY_B);
    const page = await (await consoleGet('/console/callbacks', b1.cookie)).text();
    expect(page).toContain(refB);
    expect(page).toContain('Given up');
    expect(page).not.toContain(refsA[0]!);

    // An application whose callbacks were given up by the retry window, for the replay test (test/replay).
    if (process.env.RECORD_HISTORIES === '1') {
      const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId('shop-a', refsA[0]!));
      recordFinanceHistory(await handle.fetchHistory(), 'callback-given-up');
    }
  });

  it('one bulk resend delivers them once the endpoint answers; a second sends none again; each is audited', async () => {
    const keys = (await list(shopA)).callbacks.map((c) => c.idempotencyKey).sort();
    hooksA.state.down = false;
    range = { since: started, until: new Date(Date.now() + 60_000).toISOString() };
    const res = await shopA('/callbacks/resend', { method: 'POST', body: JSON.stringify(range) });
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    expect(location).toMatch(/^\/callbacks\/resend\?since=/);
    const done = await eventually(async () => {
      const progress = (await (await shopA(location)).json()) as Progress;
      return progress.done ? progress : undefined;
    }, 60_000);
    expect(done).toMatchObject({ found: 4, delivered: 4, failed: 0 });
    expect(hooksA.delivered().sort()).toEqual(keys);
    expect((await list(shopA)).callbacks).toEqual([]);
    // shop-b's are untouched: still listed, nothing sent to its endpoint since.
    expect((await list(shopB)).callbacks).toHaveLength(2);
    expect(hooksB.delivered()).toEqual([]);
    // The bulk resend and shop-a's ledger (reports, then deliveries), for the replay test (test/replay).
    await recordConsentHistory(
      'callback-bulk-resend-delivered',
      stack.t.client.workflow.getHandle(callbackBulkResendWorkflowId('shop-a', range)),
    );
    await recordConsentHistory(
      'callback-ledger-given-up-resent',
      stack.t.client.workflow.getHandle(callbackLedgerWorkflowId('shop-a')),
    );

    // The same request again: a new run finds nothing given up, sends nothing.
    const sentBefore = hooksA.received.length;
    const again = await shopA('/callbacks/resend', { method: 'POST', body: JSON.stringify(range) });
    expect(again.status).toBe(202);
    const second = await eventually(async () => {
      const progress = (await (await shopA(location)).json()) as Progress;
      return progress.done && progress.found === 0 ? progress : undefined;
    }, 60_000);
    expect(second).toMatchObject({ found: 0, delivered: 0 });
    expect(hooksA.received.length).toBe(sentBefore);
    expect(hooksA.delivered().sort()).toEqual(keys); // each key delivered once, with its own webhook-id

    const records = audit.records.filter((r) => r.action === 'callback.resend');
    expect(records.map((r) => [r.actor.name, r.details])).toEqual([
      ['shop-a', { bulk: true, since: range.since, until: range.until, count: 4, via: 'api' }],
      ['shop-a', { bulk: true, since: range.since, until: range.until, count: 0, via: 'api' }],
    ]);
  });

  it("a merchant cannot see or resend another's: its resend and its progress are its own", async () => {
    const rangeQuery = new URLSearchParams(range).toString();
    // shop-b has no bulk resend of that range: 404, though shop-a's exists.
    expect((await shopB(`/callbacks/resend?${rangeQuery}`)).status).toBe(404);
    // No field names a merchant.
    const named = await shopB('/callbacks/resend', {
      method: 'POST',
      body: JSON.stringify({ ...range, merchantId: 'shop-a' }),
    });
    expect(named.status).toBe(400);
    // shop-b's own resend sends shop-b's callbacks, to shop-b's endpoint only.
    hooksB.state.down = false;
    const sentToA = hooksA.received.length;
    // Through the console's form this time (UTC date and time, as its inputs give them).
    const { cookie, csrf } = await signIn(KEY_B);
    const local = (iso: string) => iso.slice(0, 19);
    const until = new Date(Date.parse(range.until) + 1000).toISOString();
    const res = await consolePost(
      '/console/callbacks/resend',
      { csrf, since: local(range.since), until: local(until), type: '' },
      cookie,
    );
    expect(res.status).toBe(303);
    const shown = await (await consoleGet(res.headers.get('location')!, cookie)).text();
    expect(shown).toContain('Bulk resend of this range');
    const consoleRange = { since: `${local(range.since)}.000Z`, until: `${local(until)}.000Z` };
    const query = new URLSearchParams(consoleRange).toString();
    const progress = await eventually(async () => {
      const p = (await (await shopB(`/callbacks/resend?${query}`)).json()) as Progress;
      return p.done ? p : undefined;
    }, 60_000);
    expect(progress).toMatchObject({ found: 2, delivered: 2, failed: 0 });
    expect(hooksB.delivered().every((key) => key.startsWith(`finance-application:shop-b:${refB}:`))).toBe(true);
    expect(hooksB.delivered()).toHaveLength(2);
    expect(hooksA.received.length).toBe(sentToA);
    expect((await list(shopB)).callbacks).toEqual([]);
    expect(audit.records.at(-1)).toMatchObject({
      actor: { kind: 'merchant', name: 'shop-b' },
      action: 'callback.resend',
      details: { bulk: true, ...consoleRange, count: 2, via: 'console' },
    });
  });
});
