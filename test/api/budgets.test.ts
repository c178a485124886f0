/**
 * Merchant budgets on the facade (src/api/budgets.ts) on the whole stack: requests per minute per merchant (429 with
 * Retry-After, the IETF RateLimit headers and a problem body) and long-polls held at once per merchant. Every
 * answer is checked against the OpenAPI document, and the document declares the 429 on every facade operation.
 */
import { randomUUID } from 'node:crypto';
import { ProblemType } from '../../src/api/budgets';
import { createOpenApiDocument } from '../../src/api/openapi/document';
import { WAIT_OUTCOME_HEADER } from '../../src/api/resources/finance-applications/schemas';
import { startFinanceApplication } from '../../src/client/finance-applications';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

const SHOP_A = { name: 'shop-a', key: 'shop-a-key-0123456789abcdef0123' }; // 5 requests a minute
const SHOP_B = { name: 'shop-b', key: 'shop-b-key-0123456789abcdef0123' }; // 2 long-polls at once
const SHOP_C = { name: 'shop-c', key: 'shop-c-key-0123456789abcdef0123' }; // the defaults
const REQUESTS_PER_MINUTE = 5;
const MAX_LONG_POLLS = 2;

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  error: string;
  message: string;
}

describe('merchant budgets on the facade (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      merchantApiKeys: [SHOP_A, SHOP_B, SHOP_C],
      merchantsFile: {
        merchants: {
          'shop-a': { requestsPerMinute: REQUESTS_PER_MINUTE },
          'shop-b': { maxLongPolls: MAX_LONG_POLLS },
        },
      },
    });
  });
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await stack?.close();
  });

  const as = (merchant: { key: string } | undefined, path: string, init: RequestInit = {}) =>
    fetch(`${stack.internalUrl}${path}`, {
      ...init,
      headers: merchant ? { authorization: `Bearer ${merchant.key}` } : {},
    });
  const refusals = async (merchant: string, budget: string) =>
    (await stack.metrics.budgetRefusals.get()).values.find(
      (v) => v.labels.merchant === merchant && v.labels.budget === budget,
    )?.value ?? 0;
  const longPollsOpen = async (merchant: string) =>
    (await stack.metrics.longPollsOpen.get()).values.find((v) => v.labels.merchant === merchant)?.value ?? 0;
  const expectProblem = async (res: Response, type: string): Promise<Problem> => {
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as Problem;
    // The problem's fields, and the error body's that clients read today.
    expect(body).toEqual({
      type,
      title: expect.any(String),
      status: 429,
      detail: expect.any(String),
      error: 'too_many_requests',
      message: body.detail,
    });
    return body;
  };

  it('429 with Retry-After and the RateLimit headers for a merchant over its limit, while another is served', async () => {
    // Requests without a valid key are refused before the budget: they spend no merchant's.
    expect((await as(undefined, '/applications')).status).toBe(401);
    expect((await as({ key: `${SHOP_A.key}-wrong` }, '/applications')).status).toBe(401);

    const remaining: string[] = [];
    for (let i = 0; i < REQUESTS_PER_MINUTE; i++) {
      const res = await as(SHOP_A, '/applications?pageSize=1');
      expect(res.status).toBe(200);
      // draft-ietf-httpapi-ratelimit-headers-08: the policy (quota, window, partition) and what is left of it.
      expect(res.headers.get('ratelimit-policy')).toMatch(
        new RegExp(`^"merchant-requests"; q=${REQUESTS_PER_MINUTE}; w=60; pk=:[A-Za-z0-9+/=]+:$`),
      );
      remaining.push(/; r=(\d+); t=\d+$/.exec(res.headers.get('ratelimit') ?? '')?.[1] ?? 'none');
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);

    const refused = await as(SHOP_A, '/applications?pageSize=1');
    const body = await expectProblem(refused, ProblemType.RateLimited);
    expect(body.detail).toContain(`${REQUESTS_PER_MINUTE} requests in 60 s`);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= 60).toBe(true);
    expect(refused.headers.get('ratelimit')).toMatch(/^"merchant-requests"; r=0; t=\d+$/);
    // Every facade path counts, routed or not, and the refusal comes before the route (no 404 here).
    expect((await as(SHOP_A, `/applications/no-such-${randomUUID()}`)).status).toBe(429);
    expect((await as(SHOP_A, '/consents/c-1/refresh')).status).toBe(429);
    expect(await refusals('shop-a', 'requests')).toBe(3);

    // Another merchant, meanwhile: served, under its own (default) budget.
    const other = await as(SHOP_C, '/applications?pageSize=1');
    expect(other.status).toBe(200);
    expect(other.headers.get('ratelimit-policy')).toMatch(/^"merchant-requests"; q=6000; w=60; /);
    expect(await refusals('shop-c', 'requests')).toBe(0);
    // The partition key names the merchant without its name: another merchant's differs.
    const pk = (res: Response) => /pk=(:[^:]+:)/.exec(res.headers.get('ratelimit-policy') ?? '')?.[1];
    expect(pk(other)).not.toBe(pk(refused));
    expect(pk(refused)).not.toContain('shop-a');
  });

  it('at most maxLongPolls long-polls at once per merchant: released on answer and on hang-up', async () => {
    const start = async (merchant: string) => {
      const ref = `budget-${randomUUID()}`;
      // The application stays CREATED: a long-poll from CREATED waits until its timeout.
      stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
      await startFinanceApplication(
        stack.t.client,
        merchant,
        {
          merchantReference: ref,
          application: { redirectUrl: 'https://shop.example/done' },
          settings: { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 },
        },
        { taskQueue: stack.t.taskQueue },
      );
      return ref;
    };
    const refB = await start('shop-b');
    const refC = await start('shop-c');
    const longPoll = (merchant: { key: string }, ref: string, timeout: string, signal?: AbortSignal) =>
      as(merchant, `/applications/${ref}?waitForChangeFrom=CREATED&timeout=${timeout}`, { signal });

    const hangUps = [new AbortController(), new AbortController()];
    const held = hangUps.map((c) => longPoll(SHOP_B, refB, '60s', c.signal).catch((err: unknown) => err));
    await eventually(async () => ((await longPollsOpen('shop-b')) === MAX_LONG_POLLS ? true : undefined));

    // One more of shop-b's is refused at once...
    const refused = await longPoll(SHOP_B, refB, '60s');
    await expectProblem(refused, ProblemType.TooManyLongPolls);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refusals('shop-b', 'long_polls')).toBe(1);
    // ...its plain reads are not long-polls, and another merchant's long-poll is served.
    expect((await as(SHOP_B, `/applications/${refB}`)).status).toBe(200);
    const otherMerchant = await longPoll(SHOP_C, refC, '1s');
    expect(otherMerchant.status).toBe(200);
    expect(otherMerchant.headers.get(WAIT_OUTCOME_HEADER)).toBe('timeout');

    // A merchant that hangs up frees its slot.
    hangUps[0]!.abort();
    await eventually(async () => ((await longPollsOpen('shop-b')) === MAX_LONG_POLLS - 1 ? true : undefined));
    const next = await longPoll(SHOP_B, refB, '1s');
    expect(next.status).toBe(200);
    expect(next.headers.get(WAIT_OUTCOME_HEADER)).toBe('timeout');
    // An answered one freed its slot too: one held (the second of the first two), as many free as before.
    expect(await longPollsOpen('shop-b')).toBe(MAX_LONG_POLLS - 1);
    hangUps[1]!.abort();
    await Promise.all(held);
    await eventually(async () => ((await longPollsOpen('shop-b')) === 0 ? true : undefined));
    expect(await refusals('shop-b', 'long_polls')).toBe(1);
  });

  it('the OpenAPI document declares the 429, its problem body and its headers on every facade operation', () => {
    const paths = createOpenApiDocument().paths ?? {};
    const facade = Object.entries(paths).filter(([path]) => /^\/(applications|consents)(\/|$)/.test(path));
    expect(facade.length).toBeGreaterThan(0);
    for (const [path, item] of facade) {
      for (const [method, operation] of Object.entries(
        item as Record<string, { responses?: Record<string, unknown> }>,
      )) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const answer = operation.responses?.['429'] as
          { content?: Record<string, unknown>; headers?: Record<string, unknown> } | undefined;
        expect({ operation: `${method.toUpperCase()} ${path}`, content: Object.keys(answer?.content ?? {}) }).toEqual({
          operation: `${method.toUpperCase()} ${path}`,
          content: ['application/problem+json'],
        });
        expect(Object.keys(answer?.headers ?? {}).sort()).toEqual(['RateLimit', 'RateLimit-Policy', 'Retry-After']);
      }
    }
  });
});
