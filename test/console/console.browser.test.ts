/**
 * The merchant console in headless Chromium (Debian's chromium driven by playwright-core) on one whole stack:
 * sign-in through the form, merchant B not seeing A's application, a status change (the sandbox's webhook) appearing
 * on the open page without a reload and announced in its live region, keyboard navigation, no CSP violation, no
 * failed sub-resource (the icon included) and no console error, and a screenshot kept in
 * test-artifacts/console-application.png. `npm run test:console` (scripts/install-system-packages.sh).
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import pino from 'pino';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

const KEY_A = 'browser-a-key-0123456789abcdefghijkl';
const KEY_B = 'browser-b-key-0123456789abcdefghijkl';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

describe('merchant console in Chromium (whole stack)', () => {
  let stack: TestStack;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  /** Content-Security-Policy violations the browser reported (none expected). */
  const violations: string[] = [];
  /** Sub-resources (script, style, icon, live fetches) that failed or answered an error status: none expected. */
  const failedRequests: string[] = [];
  /** Errors the pages logged to their console: none expected. */
  const consoleErrors: string[] = [];
  /** Pages (documents) the tests expect refused: a wrong key's 401, another merchant's 404. */
  const refusedPages = new Set<string>();
  /** The icon's answers (the page links it; the browser fetches it). */
  const icons: number[] = [];
  /** The stack's log lines at warn or above (a browser leaving a live page is none of them). */
  const serverLog: { level: number; msg: string; path?: string }[] = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void serverLog.push(JSON.parse(line) as (typeof serverLog)[number]) },
  );

  /** Records what a page's browser says of it: CSP violations, console errors, failed or refused sub-resources. */
  function watch(page: Page): Page {
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) violations.push(msg.text());
      if (msg.type() !== 'error') return;
      // Chromium logs a refused page's status too: that page is the test's business, not an error of the console.
      if (/^Failed to load resource/.test(msg.text()) && refusedPages.has(msg.location().url)) return;
      consoleErrors.push(`${msg.text()} (${msg.location().url})`);
    });
    page.on('requestfailed', (request) => {
      // Cut by the browser when its page went away (a live fetch still waiting, an icon not yet loaded): not refused.
      if (request.failure()?.errorText === 'net::ERR_ABORTED') return;
      failedRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
    });
    page.on('response', (response) => {
      if (new URL(response.url()).pathname.endsWith('/favicon.svg')) icons.push(response.status());
      if (response.status() < 400) return;
      // Pages the tests expect to be refused (a wrong key's 401, another merchant's 404) are documents.
      if (response.request().resourceType() === 'document') refusedPages.add(response.url());
      else failedRequests.push(`${response.request().method()} ${response.url()}: ${response.status()}`);
    });
    return page;
  }
  const refA = `browser-a-${randomUUID()}`;
  const refB = `browser-b-${randomUUID()}`;
  let idA: string;
  /** Merchant B's callback endpoint: refuses (503) until the test lets it take them. */
  const hooksB = { down: true, ok: [] as string[] };
  let hooksServer: Server;
  const refUndelivered = `browser-b-undelivered-${randomUUID()}`;

  beforeAll(async () => {
    hooksServer = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (!hooksB.down) hooksB.ok.push(String(req.headers['webhook-id']));
        res.writeHead(hooksB.down ? 503 : 200).end();
      });
    });
    await new Promise<void>((resolve) => hooksServer.listen(0, '127.0.0.1', resolve));
    const hooksOrigin = `http://127.0.0.1:${(hooksServer.address() as AddressInfo).port}`;
    [stack, browser] = await Promise.all([
      startTestStack({
        logger,
        merchantApiKeys: [
          { name: 'shop-a', key: KEY_A },
          { name: 'shop-b', key: KEY_B },
        ],
        // B's callbacks are given up after 2 s of refusals (time compressed): its Undelivered callbacks page lists them.
        merchantsFile: {
          merchants: { 'shop-b': { callbackAllowedOrigins: [hooksOrigin], callbackRetryWindow: '2s' } },
        },
      }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
    ]);
    // Applications that stay where the test puts them.
    for (const ref of [refA, refB])
      stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const create = async (key: string, merchantReference: string) => {
      const res = await fetch(`${stack.internalUrl}/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/done' }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { financeApplicationId: string }).financeApplicationId;
    };
    [idA] = await Promise.all([create(KEY_A, refA), create(KEY_B, refB)]);
    const undelivered = await fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_B}` },
      body: JSON.stringify({
        merchantReference: refUndelivered,
        redirectUrl: 'https://shop.example/done',
        callbackUrl: `${hooksOrigin}/hooks`,
      }),
    });
    expect(undelivered.status).toBe(201);
  });
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
    await new Promise<void>((resolve) => hooksServer?.close(() => resolve()));
  });

  /** A fresh browser profile (its own cookies), signed in with the key through the form and the keyboard. */
  async function signedIn(key: string): Promise<Page> {
    // A time zone and locale of their own: the page's times must be the browser's, not the server's UTC.
    const context = await browser.newContext({
      baseURL: stack.internalUrl,
      timezoneId: 'Asia/Kolkata',
      locale: 'en-GB',
    });
    contexts.push(context);
    const page = watch(await context.newPage());
    await page.goto('/console');
    await page.getByLabel('Merchant API key').fill(key);
    await page.keyboard.press('Enter');
    await page.waitForURL('**/console/applications');
    return page;
  }

  it('signs in through the form, and a wrong key is told so', async () => {
    const context = await browser.newContext({ baseURL: stack.internalUrl });
    contexts.push(context);
    const page = watch(await context.newPage());
    await page.goto('/console/applications'); // not signed in: sent to the form
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await page.getByLabel('Merchant API key').fill('not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expectText(page.getByRole('alert'), 'not a merchant API key');
    const cookies = await context.cookies();
    expect(cookies).toEqual([]);

    const a = await signedIn(KEY_A);
    const [cookie] = await a.context().cookies();
    expect(cookie).toMatchObject({ name: 'paylater_console', path: '/console', httpOnly: true, sameSite: 'Strict' });
    // The page's script cannot read the session cookie.
    expect(await a.evaluate(() => (globalThis as unknown as BrowserGlobals).document.cookie)).toBe('');
    await expectText(a.getByRole('banner'), 'Signed in as shop-a');
  });

  it("shows merchant B its own applications and none of A's", async () => {
    const b = await signedIn(KEY_B);
    // B's own shows once visibility has it: A's, created at the same time, would show by then too.
    await eventually(async () => {
      await b.goto('/console/applications');
      return (await b.getByRole('link', { name: refB }).count()) === 1 ? true : undefined;
    });
    expect(await b.getByRole('link', { name: refA }).count()).toBe(0);
    const response = await b.goto(`/console/applications/${refA}`);
    expect(response?.status()).toBe(404);
  });

  it('updates the open page when the status changes, without a reload, and announces it', async () => {
    const a = await signedIn(KEY_A);
    // Keyboard: the first Tab reaches the skip link; the search takes a reference; Tab and Enter open the result.
    await a.keyboard.press('Tab');
    expect(await a.evaluate(() => (globalThis as unknown as BrowserGlobals).document.activeElement?.textContent)).toBe(
      'Skip to content',
    );
    await a.getByLabel('Reference starts with').fill(refA);
    // Each search is a navigation: wait for its page, or the next step would read (or Tab through) the old one.
    await Promise.all([a.waitForEvent('load'), a.keyboard.press('Enter')]);
    await eventually(async () => {
      if ((await a.getByRole('link', { name: refA }).count()) === 1) return true;
      await Promise.all([a.waitForEvent('load'), a.getByRole('button', { name: 'Search' }).press('Enter')]);
      return undefined;
    });
    for (
      let i = 0;
      i < 30 &&
      (await a.evaluate(() =>
        (globalThis as unknown as BrowserGlobals).document.activeElement?.textContent?.trim(),
      )) !== refA;
      i++
    )
      await a.keyboard.press('Tab');
    await a.keyboard.press('Enter');
    await a.waitForURL(`**/console/applications/${refA}`);
    await expectText(a.locator('#current-status'), 'CREATED');

    await a.evaluate(() => ((globalThis as unknown as BrowserGlobals).sameDocument = true));
    stack.sandbox.control.setApplicationStatus(idA, 'APPROVED'); // the sandbox's webhook reaches the receiver
    await expectText(a.locator('#current-status'), 'APPROVED');
    // No navigation happened: the marker set on this document is still there.
    expect(await a.evaluate(() => (globalThis as unknown as BrowserGlobals).sameDocument)).toBe(true);
    await expectText(a.locator('#live-note'), 'APPROVED');
    await expectText(a.locator('#status-history'), 'APPROVED learned from a webhook');
    // Times in the browser's zone (the exact instant on hover), and a change said relative to the creation.
    const shown = a.locator('#status-history time[data-local]').last();
    const instant = (await shown.getAttribute('datetime'))!;
    expect(await shown.textContent()).toBe(new Date(instant).toLocaleString('en-GB', { timeZone: 'Asia/Kolkata' }));
    expect(await shown.getAttribute('title')).toBe(instant);
    await expectText(a.locator('#status-history'), 'after it was created');
    mkdirSync(ARTIFACTS, { recursive: true });
    await a.screenshot({ path: join(ARTIFACTS, 'console-application.png'), fullPage: true });
    expect(violations).toEqual([]);
  });

  it('lists merchant B its undelivered callbacks, and sends the given-up ones of a range again', async () => {
    const b = await signedIn(KEY_B);
    await b.getByRole('link', { name: 'Undelivered callbacks' }).click();
    await b.waitForURL('**/console/callbacks');
    // Given up after B's short window; listed with the application's reference.
    await eventually(
      async () => {
        await b.goto('/console/callbacks');
        return (await b.getByRole('cell', { name: 'Given up' }).count()) > 0 ? true : undefined;
      },
      60_000,
      500,
    );
    expect(await b.getByRole('link', { name: refUndelivered }).count()).toBeGreaterThan(0);
    // The range (UTC, as the page says), then the bulk resend once the endpoint takes them.
    const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    await b.getByLabel('First sent from').fill(minute(Date.now() - 10 * 60_000));
    await b.getByLabel('until').fill(minute(Date.now() + 10 * 60_000));
    await b.getByRole('button', { name: 'Filter' }).click();
    await b.waitForURL('**/console/callbacks?*');
    // Its application closes (every callback given up: none is still retried) before the range is sent again, and
    // the page lists one given-up callback per status it had.
    const statuses = await eventually(
      async () => {
        const res = await fetch(`${stack.internalUrl}/applications/${refUndelivered}`, {
          headers: { authorization: `Bearer ${KEY_B}` },
        });
        const read = (await res.json()) as { phase: string; history: unknown[] };
        return read.phase === 'closed' ? read.history.length : undefined;
      },
      120_000,
      500,
    );
    expect(statuses).toBeGreaterThan(0);
    const given = await eventually(
      async () => {
        await b.reload();
        const count = await b.getByRole('cell', { name: 'Given up' }).count();
        return count === statuses ? count : undefined;
      },
      30_000,
      500,
    );
    hooksB.down = false;
    await b.getByRole('button', { name: 'Send the given-up callbacks of this range again' }).click();
    await eventually(
      async () => {
        await b.reload();
        const state = (await b.locator('#resend-state').textContent())?.replace(/\s+/g, ' ') ?? '';
        return state.includes('Finished') ? state : undefined;
      },
      60_000,
      500,
    );
    await expectText(b.locator('#resend-state'), `${given} delivered, 0 failed of ${given} found`);
    expect(hooksB.ok).toHaveLength(given);
    expect(await b.getByRole('cell', { name: 'Given up' }).count()).toBe(0);
  });

  it('takes a browser leaving a live page mid-wait quietly: no error or warning in the server log', async () => {
    const a = await signedIn(KEY_A);
    // The live script's long-poll waits on the server (nothing changes refA now) when the browser leaves.
    const livePoll = a.waitForRequest((r) => new URL(r.url()).searchParams.has('waitFrom'));
    await a.goto(`/console/applications/${refA}`);
    await livePoll;
    await new Promise((r) => setTimeout(r, 1_000));
    const before = serverLog.length;
    await a.goto('/console/consents');
    await a.close();
    // The server notices the closed connection at once; give it a moment to log anything it would.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(serverLog.slice(before)).toEqual([]);
  });

  it('loaded every script, style and icon: no failed request, no console error, no 404 for the icon', async () => {
    const page = await signedIn(KEY_A);
    await page.goto('/console/consents');
    // The icon is fetched once per browser profile at most (then cached): some page of the run fetched it.
    await eventually(() => Promise.resolve(icons.length > 0 ? true : undefined), 10_000, 100);
    expect(icons.every((status) => status === 200)).toBe(true);
    expect(failedRequests).toEqual([]);
    expect(consoleErrors).toEqual([]);
    expect(violations).toEqual([]);
    // Nothing the console served was logged as an error by the server.
    expect(serverLog.filter((l) => l.level >= 50)).toEqual([]);
  });
});

/** The page's globals as page.evaluate's callbacks see them (they run in the browser; the project has no DOM types). */
interface BrowserGlobals {
  document: { cookie: string; activeElement: { textContent: string | null } | null };
  sameDocument?: boolean;
}

/** Waits (bounded) until the locator's text, its whitespace collapsed, contains `text`. */
async function expectText(locator: ReturnType<Page['locator']>, text: string): Promise<void> {
  await eventually(
    async () => ((await locator.textContent())?.replace(/\s+/g, ' ').includes(text) ? true : undefined),
    30_000,
    100,
  );
}
