/**
 * Wrong keys per client address (src/api/auth-failures.ts) on the whole stack over real HTTP: one count for the
 * merchant API, /codec and the console's sign-in, ending in 429 (a right key included) with Retry-After, the IETF
 * RateLimit fields and a problem; another address served meanwhile; no key at all is not counted; /codec answers a
 * merchant key exactly as a key that is no one's; and the bank's webhooks, forged or not, are never locked out.
 * Requests leave from several loopback addresses (127.0.0.x, all this machine's on Linux), one per case, so the
 * server sees several clients, as the sign-in limit's test does (test/api/console/sign-in-limit.test.ts).
 */
import { request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { DEFAULT_FAILED_AUTHENTICATIONS } from '../../src/config/schema';
import { ProblemType } from '../../src/api/problem-details';
import { startTestStack, type TestStack } from '../helpers/stack';

const MERCHANT = { name: 'auth-shop', key: 'auth-shop-key-0123456789abcdefghij' };
const LIMIT = DEFAULT_FAILED_AUTHENTICATIONS;
const TRIES = 50;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request from the client address `from` (a loopback address this machine holds). */
function send(
  url: string,
  options: { from: string; method?: string; headers?: Record<string, string>; body?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', localAddress: options.from, headers: options.headers ?? {} },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('failed authentications per client address (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      merchantApiKeys: [MERCHANT],
      // The production default, which the harness lifts for the other tests.
      failedAuthentications: { attempts: LIMIT },
    });
  });
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await stack?.close();
  });

  const api = (from: string, key?: string) =>
    send(`${stack.internalUrl}/applications?pageSize=1`, {
      from,
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
    });
  const codec = (from: string, key?: string) =>
    send(`${stack.internalUrl}/codec/decode`, {
      from,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
      body: '{"payloads":[]}',
    });
  const signIn = (from: string, key: string) =>
    send(`${stack.internalUrl}/console/sign-in`, {
      from,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key }).toString(),
    });
  const refusals = async (surface: string) =>
    (await stack.metrics.authRefusals.get()).values.find((v) => v.labels.surface === surface)?.value ?? 0;
  /** The statuses of TRIES attempts, in order. */
  const statuses = async (attempt: (i: number) => Promise<Answer>) => {
    const seen: number[] = [];
    for (let i = 0; i < TRIES; i++) seen.push((await attempt(i)).status);
    return seen;
  };
  const limitThen429 = (first: number) => [
    ...Array<number>(LIMIT).fill(first),
    ...Array<number>(TRIES - LIMIT).fill(429),
  ];
  const expectLockedOut = (answer: Answer) => {
    expect(answer.status).toBe(429);
    const retryAfter = Number(answer.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect(answer.headers['ratelimit-policy']).toMatch(
      new RegExp(`"failed-authentications"; q=${LIMIT}; w=900; pk=:[A-Za-z0-9+/=]+:`),
    );
    expect(answer.headers['ratelimit']).toMatch(/"failed-authentications"; r=0; t=\d+/);
  };

  it('50 wrong keys on the API end in 429, and the address is refused on /codec and the console too', async () => {
    const from = '127.0.0.2';
    expect(await statuses((i) => api(from, `wrong-key-${i}-0123456789abcdef`))).toEqual(limitThen429(401));
    // Refused before the key is compared: the right key too, a problem with the IETF fields.
    const refused = await api(from, MERCHANT.key);
    expectLockedOut(refused);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(refused.body)).toMatchObject({
      type: ProblemType.TooManyWrongKeys,
      status: 429,
      title: 'Too many wrong keys',
    });
    // One count for every route that checks a key.
    expectLockedOut(await codec(from, stack.operatorKey));
    const page = await signIn(from, MERCHANT.key);
    expectLockedOut(page);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['set-cookie']).toBeUndefined();
    expect(page.body).toContain('Too many failed sign-ins from this address');
    // Another address, meanwhile: served.
    expect((await api('127.0.0.1', MERCHANT.key)).status).toBe(200);
    expect(await refusals('merchant_api')).toBe(TRIES - LIMIT + 1);
  });

  it('50 wrong keys on /codec end in 429 (a merchant key counted as any other), and lock the API out too', async () => {
    const from = '127.0.0.3';
    const keys = (i: number) => (i % 2 === 0 ? MERCHANT.key : `nobody-${i}-0123456789abcdef`);
    expect(await statuses((i) => codec(from, keys(i)))).toEqual(limitThen429(401));
    expectLockedOut(await codec(from, stack.operatorKey));
    expectLockedOut(await api(from, MERCHANT.key));
    expect((await codec('127.0.0.1', stack.operatorKey)).status).toBe(200);
  });

  it('50 wrong keys on the console sign-in end in 429, and lock the API and /codec out too', async () => {
    const from = '127.0.0.4';
    expect(await statuses((i) => signIn(from, `wrong-key-${i}-0123456789abcdef`))).toEqual(limitThen429(401));
    expectLockedOut(await signIn(from, MERCHANT.key));
    expectLockedOut(await api(from, MERCHANT.key));
    expectLockedOut(await codec(from, stack.operatorKey));
    expect((await signIn('127.0.0.1', MERCHANT.key)).status).toBe(303);
  });

  it('does not count a request without a key (not a guess)', async () => {
    const from = '127.0.0.5';
    expect(await statuses(() => api(from))).toEqual(Array<number>(TRIES).fill(401));
    expect(await statuses(() => codec(from))).toEqual(Array<number>(TRIES).fill(401));
    expect((await api(from, MERCHANT.key)).status).toBe(200);
  });

  it('/codec answers a merchant key exactly as a key that is no one', async () => {
    // Two fresh addresses, so that both answers are the first failure of their address.
    const merchant = await codec('127.0.0.6', MERCHANT.key);
    const unknown = await codec('127.0.0.7', `nobody-${randomUUID()}`);
    const comparable = (a: Answer) => ({
      status: a.status,
      contentType: a.headers['content-type'],
      wwwAuthenticate: a.headers['www-authenticate'],
      remaining: /r=(\d+)/.exec(String(a.headers['ratelimit']))?.[1],
      body: a.body,
    });
    expect(comparable(merchant)).toEqual(comparable(unknown));
    expect(merchant.status).toBe(401);
    expect(merchant.body).not.toMatch(/operator key is required|forbidden/i);
  });

  it('never locks the bank out: forged webhooks are 401 however many, from an address locked out of the API', async () => {
    const from = '127.0.0.8';
    expect(await statuses((i) => api(from, `wrong-key-${i}-0123456789abcdef`))).toEqual(limitThen429(401));
    const before = {
      api: await refusals('merchant_api'),
      operator: await refusals('operator_api'),
      console: await refusals('console'),
    };
    const accountEvent = (consentId: string) =>
      JSON.stringify({
        consentId,
        taskId: `task-${randomUUID()}`,
        taskStatus: 'FINISHED',
        bankCode: 'FORGE',
        bankName: 'Forged Bank',
        accounts: [{ accountId: 'f-1', eventType: 'ADDED' }],
      });
    const accounts = (authorization: string) =>
      send(`${stack.publicUrl}/webhooks/accounts`, {
        from,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: accountEvent(`forged-${randomUUID()}`),
      });
    const finance = (i: number) =>
      send(`${stack.publicUrl}/webhooks/finance-applications/order-${i}/forged-hash-${i}`, {
        from,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ financeApplicationId: `fa-${i}`, status: 'APPROVED' }),
      });
    expect(await statuses((i) => accounts(`Basic forged-${i}`))).toEqual(Array<number>(TRIES).fill(401));
    expect(await statuses((i) => finance(i))).toEqual(Array<number>(TRIES).fill(401));
    // The bank's own header still goes through at once (an unclaimed consent: accepted and ignored).
    const genuine = await accounts(stack.webhooks.securityHeader);
    expect(genuine.status).toBe(200);
    expect(JSON.parse(genuine.body)).toMatchObject({ status: 'ignored' });
    // Nothing of that was counted as an authentication failure.
    expect({
      api: await refusals('merchant_api'),
      operator: await refusals('operator_api'),
      console: await refusals('console'),
    }).toEqual(before);
  });
});
