/**
 * The merchant budgets on everything that costs (src/api/budgets.ts), on the whole stack over real HTTP: the console
 * behind the API's request budget, creations and refreshes per minute, claimed consents and open applications in
 * total (counted in Temporal, so a second API process refuses as well), long-polls shared by the API and the console,
 * and the console's live pages held at once. Each refusal is a 429 with Retry-After and the RateLimit fields of its
 * policy, counted in paylater_merchant_budget_refusals_total, while another merchant is served meanwhile. Every
 * merchant here has a name of its own for this run: the totals are counted in the suite's one Temporal namespace.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createInternalApp } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { ProblemType } from '../../src/api/problem-details';
import { countMerchantTotal, type MerchantTotal } from '../../src/client/merchant-totals';
import { consentRefreshHandle } from '../../src/client/consent-refresh';
import { startFinanceApplication } from '../../src/client/finance-applications';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

const run = randomUUID().slice(0, 8);
const merchant = (role: string) => ({ name: `${role}-${run}`, key: `${role}-${run}-key-0123456789abcdefghij` });
const CONSOLE = merchant('console'); // 6 requests a minute, API and console together
const CREATIONS = merchant('creations'); // 2 creations a minute
const REFRESHES = merchant('refreshes'); // 1 refresh a minute
const CLAIMS = merchant('claims'); // 2 consents claimed at once
const OPEN = merchant('open'); // 2 open applications at once
const POLLS = merchant('polls'); // 1 long-poll at once
const PAGES = merchant('pages'); // 1 console live page at once
const OTHER = merchant('other'); // the defaults

interface Problem {
  type: string;
  status: number;
  detail: string;
}

describe('merchant budgets on everything that costs (whole stack)', () => {
  let stack: TestStack;
  const refreshes: string[] = [];
  beforeAll(async () => {
    stack = await startTestStack({
      merchantApiKeys: [CONSOLE, CREATIONS, REFRESHES, CLAIMS, OPEN, POLLS, PAGES, OTHER],
      // Merchants claim their own consents here (the budgets are the subject, not who assigns).
      consentAssignment: 'merchant',
      merchantsFile: {
        merchants: {
          [CONSOLE.name]: { requestsPerMinute: 6 },
          [CREATIONS.name]: { creationsPerMinute: 2 },
          [REFRESHES.name]: { refreshesPerMinute: 1 },
          [CLAIMS.name]: { maxConsents: 2 },
          [OPEN.name]: { maxOpenApplications: 2 },
          [POLLS.name]: { maxLongPolls: 1 },
          [PAGES.name]: { maxLivePages: 1 },
        },
      },
    });
  });
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    for (const consentId of refreshes)
      await consentRefreshHandle(stack.t.client, consentId)
        .terminate('test done')
        .catch(() => undefined);
    await stack?.close();
  });

  const as = (who: { key: string }, path: string, init: RequestInit = {}, base = stack.internalUrl) =>
    fetch(`${base}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json', ...init.headers },
    });
  const create = (who: { key: string }, merchantReference: string, base?: string) =>
    as(
      who,
      '/applications',
      { method: 'POST', body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/done' }) },
      base,
    );
  const claim = (who: { key: string }, consentId: string, base?: string) =>
    as(who, `/consents/${consentId}`, { method: 'PUT' }, base);
  const refresh = (who: { key: string }, consentId: string, body: object = {}) =>
    as(who, `/consents/${consentId}/refresh`, { method: 'POST', body: JSON.stringify(body) });
  const refusals = async (who: { name: string }, budget: string) =>
    (await stack.metrics.budgetRefusals.get()).values.find(
      (v) => v.labels.merchant === who.name && v.labels.budget === budget,
    )?.value ?? 0;
  const gauge = async (name: 'longPollsOpen' | 'livePagesOpen', who: { name: string }) =>
    (await stack.metrics[name].get()).values.find((v) => v.labels.merchant === who.name)?.value ?? 0;
  /** A refusal: 429, Retry-After, the policy that refused at r=0, and (API) a problem of `type`. */
  const expectRefused = async (res: Response, policy: string, type?: string): Promise<Problem | undefined> => {
    expect({ status: res.status, retryAfter: Number(res.headers.get('retry-after')) > 0 }).toEqual({
      status: 429,
      retryAfter: true,
    });
    expect(res.headers.get('ratelimit-policy')).toMatch(new RegExp(`"${policy}"; q=\\d+`));
    expect(res.headers.get('ratelimit')).toMatch(new RegExp(`"${policy}"; r=0; t=\\d+`));
    if (type === undefined) return undefined;
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as Problem;
    expect(body).toMatchObject({ type, status: 429 });
    return body;
  };
  /** Signs in to the console; the session cookie as a Cookie header. */
  const signIn = async (who: { key: string }) => {
    const res = await fetch(`${stack.internalUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key: who.key }).toString(),
    });
    expect(res.status).toBe(303);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  };
  const page = (cookie: string, path: string, signal?: AbortSignal) =>
    fetch(`${stack.internalUrl}${path}`, { redirect: 'manual', headers: { cookie, accept: 'text/html' }, signal });
  /** An application that stays CREATED (no status change to end a long-poll), started without the facade. */
  const stuckApplication = async (who: { name: string }) => {
    const ref = `stuck-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    await startFinanceApplication(
      stack.t.client,
      who.name,
      {
        merchantReference: ref,
        application: { redirectUrl: 'https://shop.example/done' },
        settings: { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 },
      },
      { taskQueue: stack.t.taskQueue },
    );
    return ref;
  };
  /** Another API process on the same Temporal: an internal app with budgets of its own (nothing in memory shared). */
  const secondProcess = async <T>(fn: (base: string) => Promise<T>): Promise<T> => {
    const server: Server = await listen(createInternalApp(stack.appDeps), 0, '127.0.0.1');
    try {
      return await fn(`http://127.0.0.1:${boundPort(server)}`);
    } finally {
      await closeServer(server, 1_000);
    }
  };
  const visible = (who: { name: string }, total: MerchantTotal, count: number) =>
    eventually(async () => ((await countMerchantTotal(stack.t.client, total, who.name)) === count ? true : undefined));

  it("puts the console behind the merchant's request budget: one count with the API", async () => {
    const cookie = await signIn(CONSOLE); // signing in is not a merchant's request yet
    const left = (res: Response) => /"merchant-requests"; r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1];
    const seen: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await as(CONSOLE, '/applications?pageSize=1');
      expect(res.status).toBe(200);
      seen.push(left(res));
    }
    for (let i = 0; i < 3; i++) {
      const res = await page(cookie, '/console/applications');
      expect(res.status).toBe(200);
      seen.push(left(res));
    }
    expect(seen).toEqual(['5', '4', '3', '2', '1', '0']);

    // The console's pages and live parts are refused as the API is, with the same fields (as a page, not JSON).
    const refused = await page(cookie, '/console/applications');
    await expectRefused(refused, 'merchant-requests');
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await refused.text()).toContain('Request budget exhausted for this merchant: try again in');
    const live = await page(cookie, '/console/consents/any-consent/refresh');
    await expectRefused(live, 'merchant-requests');
    expect(live.headers.get('content-type')).toMatch(/^text\/plain/);
    await expectRefused(await as(CONSOLE, '/applications?pageSize=1'), 'merchant-requests', ProblemType.RateLimited);
    expect(await refusals(CONSOLE, 'requests')).toBe(3);

    // Another merchant, meanwhile: its console and its API served.
    const other = await signIn(OTHER);
    expect((await page(other, '/console/applications')).status).toBe(200);
    expect((await as(OTHER, '/applications?pageSize=1')).status).toBe(200);
  });

  it('limits creations per minute (POST /applications), while other requests and merchants are served', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await create(CREATIONS, `created-${i}-${run}`);
      expect(res.status).toBe(201);
      // Every policy the creation went through: the merchant's requests and its creations.
      expect(res.headers.get('ratelimit-policy')).toMatch(
        /"merchant-requests"; q=6000; w=60; .*"merchant-creations"; q=2; w=60/,
      );
    }
    const refused = await create(CREATIONS, `created-2-${run}`);
    const problem = await expectRefused(refused, 'merchant-creations', ProblemType.RateLimited);
    expect(problem!.detail).toContain('More than 2 application creations (POST /applications) in 60 s');
    expect(await refusals(CREATIONS, 'creations')).toBe(1);
    // Only creations: the merchant's reads go on, and another merchant creates meanwhile.
    expect((await as(CREATIONS, `/applications/created-0-${run}`)).status).toBe(200);
    expect((await create(OTHER, `other-created-${run}`)).status).toBe(201);
  });

  it('limits refreshes started per minute (POST /consents/{id}/refresh)', async () => {
    const started = await refresh(REFRESHES, `refreshed-1-${run}`);
    expect(started.status).toBe(202);
    refreshes.push(`refreshed-1-${run}`);
    const refused = await refresh(REFRESHES, `refreshed-2-${run}`);
    const problem = await expectRefused(refused, 'merchant-refreshes', ProblemType.RateLimited);
    expect(problem!.detail).toContain('More than 1 consent refreshes');
    expect(await refusals(REFRESHES, 'refreshes')).toBe(1);
    // Nothing of the refused one reached the bank, nor claimed the consent.
    expect(stack.sandbox.control.refreshTasks().filter((t) => t.consentId === `refreshed-2-${run}`)).toEqual([]);
    expect((await as(REFRESHES, `/consents/refreshed-2-${run}`)).status).toBe(404);
    const other = await refresh(OTHER, `other-refreshed-${run}`);
    expect(other.status).toBe(202);
    refreshes.push(`other-refreshed-${run}`);
  });

  it('limits consents claimed in total, counted in Temporal: a second API process refuses too', async () => {
    const id = (n: string) => `claimed-${n}-${run}`;
    expect((await claim(CLAIMS, id('a'))).status).toBe(201);
    expect((await claim(CLAIMS, id('b'))).status).toBe(201);
    const refused = await claim(CLAIMS, id('c'));
    expect(refused.headers.get('retry-after')).toBe('30');
    const problem = await expectRefused(refused, 'merchant-consents', ProblemType.QuotaExceeded);
    expect(problem!.detail).toContain('already holds 2 claimed consents');
    // A consent it holds is no new claim: answered as before. A refresh would claim one: refused the same.
    expect((await claim(CLAIMS, id('a'))).status).toBe(200);
    await expectRefused(await refresh(CLAIMS, id('c')), 'merchant-consents', ProblemType.QuotaExceeded);
    expect((await as(CLAIMS, `/consents/${id('c')}`)).status).toBe(404);
    expect(await refusals(CLAIMS, 'consents')).toBe(2);
    // Another merchant claims meanwhile.
    expect((await claim(OTHER, `other-claimed-${run}`)).status).toBe(201);

    // Another API process reads the total from Temporal, not from this one's memory.
    await visible(CLAIMS, 'consents', 2);
    await secondProcess(async (base) => {
      await expectRefused(await claim(CLAIMS, id('d'), base), 'merchant-consents', ProblemType.QuotaExceeded);
      // A release through the first frees a claim for both, once Temporal counts it.
      expect((await as(CLAIMS, `/consents/${id('a')}`, { method: 'DELETE' })).status).toBe(200);
      await visible(CLAIMS, 'consents', 1);
      const claimed = await eventually(async () => {
        const res = await claim(CLAIMS, id('d'), base);
        return res.status === 429 ? undefined : res.status;
      });
      expect(claimed).toBe(201);
    });
  });

  it('limits open applications in total, counted in Temporal: a second API process refuses too', async () => {
    const ref = (n: string) => `open-${n}-${run}`;
    for (const n of ['a', 'b']) {
      stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref(n) });
      expect((await create(OPEN, ref(n))).status).toBe(201);
    }
    const refused = await create(OPEN, ref('c'));
    const problem = await expectRefused(refused, 'merchant-open-applications', ProblemType.QuotaExceeded);
    expect(problem!.detail).toContain('already has 2 open applications');
    expect(stack.sandbox.control.applications().filter((a) => a.createRequest.merchantReference === ref('c'))).toEqual(
      [],
    );
    // The same reference again creates nothing: answered with its application, as before.
    expect((await create(OPEN, ref('a'))).status).toBe(200);
    expect(await refusals(OPEN, 'open_applications')).toBe(1);
    expect((await create(OTHER, `other-open-${run}`)).status).toBe(201);

    await visible(OPEN, 'open_applications', 2);
    await secondProcess(async (base) => {
      await expectRefused(await create(OPEN, ref('d'), base), 'merchant-open-applications', ProblemType.QuotaExceeded);
    });
  });

  it("shares the merchant's long-polls between the API and the console's live timeline", async () => {
    const ref = await stuckApplication(POLLS);
    const cookie = await signIn(POLLS);
    const timeline = (signal?: AbortSignal) =>
      page(cookie, `/console/applications/${ref}/timeline?waitFrom=CREATED`, signal);
    const apiPoll = (signal?: AbortSignal) =>
      as(POLLS, `/applications/${ref}?waitForChangeFrom=CREATED&timeout=60s`, { signal });

    // The API holds the merchant's one long-poll: the console's live page is refused.
    const hangUp = new AbortController();
    const held = apiPoll(hangUp.signal).catch((err: unknown) => err);
    await eventually(async () => ((await gauge('longPollsOpen', POLLS)) === 1 ? true : undefined));
    const refused = await timeline();
    await expectRefused(refused, 'merchant-long-polls');
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.text()).toContain('Too many long-polls for this merchant');
    hangUp.abort();
    await held;
    await eventually(async () => ((await gauge('longPollsOpen', POLLS)) === 0 ? true : undefined));

    // The other way round: the console's live page holds it, the API's long-poll is refused.
    const closePage = new AbortController();
    const live = timeline(closePage.signal).catch((err: unknown) => err);
    await eventually(async () => ((await gauge('longPollsOpen', POLLS)) === 1 ? true : undefined));
    await expectRefused(await apiPoll(), 'merchant-long-polls', ProblemType.TooManyLongPolls);
    expect(await refusals(POLLS, 'long_polls')).toBe(2);
    // Another merchant's long-poll, meanwhile.
    const otherRef = await stuckApplication(OTHER);
    expect((await as(OTHER, `/applications/${otherRef}?waitForChangeFrom=CREATED&timeout=1s`)).status).toBe(200);
    closePage.abort();
    await live;
    await eventually(async () => ((await gauge('longPollsOpen', POLLS)) === 0 ? true : undefined));
  });

  it("limits the console's live pages held at once: a refresh's live page too", async () => {
    const consentId = `paged-${run}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [{ bankCode: 'QUIET', bankName: 'Quiet Bank', accounts: ['q-1'], neverAnswers: true }],
    });
    expect((await refresh(PAGES, consentId, { expectedBankCodes: ['QUIET'], timeout: '10m' })).status).toBe(202);
    refreshes.push(consentId);
    const cookie = await signIn(PAGES);
    const first = await page(cookie, `/console/consents/${consentId}/refresh`);
    expect(first.status).toBe(200);
    const since = first.headers.get('x-console-fingerprint')!;
    const livePage = (signal?: AbortSignal) =>
      page(cookie, `/console/consents/${consentId}/refresh?since=${since}`, signal);

    const closePage = new AbortController();
    const held = livePage(closePage.signal).catch((err: unknown) => err);
    await eventually(async () => ((await gauge('livePagesOpen', PAGES)) === 1 ? true : undefined));
    // A second live page, of the refresh or of an application, is refused; a plain page is not.
    const refused = await livePage();
    await expectRefused(refused, 'merchant-live-pages');
    expect(await refused.text()).toContain('Too many live pages for this merchant');
    const ref = await stuckApplication(PAGES);
    await expectRefused(
      await page(cookie, `/console/applications/${ref}/timeline?waitFrom=CREATED`),
      'merchant-live-pages',
    );
    expect((await page(cookie, `/console/consents?consentId=${consentId}`)).status).toBe(200);
    expect(await refusals(PAGES, 'live_pages')).toBe(2);
    closePage.abort();
    await held;
    await eventually(async () => ((await gauge('livePagesOpen', PAGES)) === 0 ? true : undefined));
  });
});
