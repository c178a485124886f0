/**
 * The merchant console over HTTP on the whole stack (real dev server, the bank sandbox, worker, internal listener):
 * sign-in with a good and a bad key, the session cookie's flags, the Content-Security-Policy, the CSRF token on every
 * POST, the callback timeline with a failed delivery sent again (same idempotency key), merchant B seeing none of
 * A's (404), and sign-out ending the session. The browser tests are test/console/console.browser.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { startMerchant } from '../activities/helpers/merchant-server';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { recordConsentHistory, recordFinanceHistory } from '../helpers/histories';
import { callbackRedeliveryWorkflowId } from '../../src/shared/merchant-callbacks';

const KEY_A = 'console-a-key-0123456789abcdefghijkl';
const KEY_B = 'console-b-key-0123456789abcdefghijkl';
const SESSIONS_PER_MERCHANT = 4;
const secret = (label: string) => `whsec_${Buffer.from(label.padEnd(32, '.')).toString('base64')}`;

type Merchant = Awaited<ReturnType<typeof startMerchant>>;

describe('merchant console over HTTP (whole stack)', () => {
  let stack: TestStack;
  let hooks: Merchant;
  beforeAll(async () => {
    hooks = await startMerchant();
    const origin = new URL(hooks.url).origin;
    stack = await startTestStack({
      // Small, so that one test can go past it (CONSOLE_SESSIONS_PER_MERCHANT); no test holds more of one merchant's.
      consoleSessionsPerMerchant: SESSIONS_PER_MERCHANT,
      merchantApiKeys: [
        { name: 'shop-a', key: KEY_A },
        { name: 'shop-b', key: KEY_B },
      ],
      merchantsFile: {
        merchants: {
          'shop-a': { callbackSigningSecrets: [secret('console shop-a')], callbackAllowedOrigins: [origin] },
          // An origin receives one merchant's callbacks (start-up refuses one listed for two).
          'shop-b': {
            callbackSigningSecrets: [secret('console shop-b')],
            callbackAllowedOrigins: ['https://hooks.shop-b.example'],
          },
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await hooks?.close();
  });

  const url = (path: string) => `${stack.internalUrl}${path}`;
  /** A page's text with its whitespace collapsed (the markup is formatted over lines). */
  const text = async (res: Response) => (await res.text()).replace(/\s+/g, ' ').replace(/> </g, '><');
  const get = (path: string, cookie?: string) =>
    fetch(url(path), { redirect: 'manual', headers: cookie ? { cookie } : {} });
  const post = (path: string, form: Record<string, string>, cookie?: string, headers: Record<string, string> = {}) =>
    fetch(url(path), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
      body: new URLSearchParams(form).toString(),
    });
  /** Signs in; the session cookie as a Cookie header and the page's CSRF token. */
  async function signIn(key: string): Promise<{ cookie: string; csrf: string }> {
    const res = await post('/console/sign-in', { key });
    expect(res.status).toBe(303);
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await get('/console/applications', cookie)).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    return { cookie, csrf };
  }

  it('signs in with a merchant key only, in a POST form, into an HttpOnly SameSite=Strict cookie under /console', async () => {
    const form = await get('/console');
    expect(form.status).toBe(200);
    const csp = form.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await form.text();
    expect(html).toContain('<form method="post" action="/console/sign-in"');
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)/); // no inline script

    const wrong = await post('/console/sign-in', { key: 'not-a-key' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect(await wrong.text()).toContain('role="alert"');
    // The facade's bearer key of a merchant is no console session.
    expect((await get('/console/applications', `paylater_console=${KEY_A}`)).headers.get('location')).toBe(
      '/console/sign-in',
    );

    const ok = await post('/console/sign-in', { key: KEY_A });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/console/applications');
    const cookie = ok.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^paylater_console=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain('Path=/console');
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).not.toContain('Secure'); // plain http here
    expect(cookie).not.toContain(KEY_A);
    // Behind a TLS-terminating proxy the cookie is Secure.
    const overTls = await post('/console/sign-in', { key: KEY_A }, undefined, { 'x-forwarded-proto': 'https' });
    expect(overTls.headers.get('set-cookie')).toContain('Secure');
    // Not signed in: pages send the browser to the form; live fragments answer 401.
    expect((await get('/console/applications')).headers.get('location')).toBe('/console/sign-in');
    expect((await get('/console/applications/x/timeline')).status).toBe(401);
  });

  it("shows A's timeline with a refused callback, sends it again with the CSRF token and the same key; B sees none of it", async () => {
    const a = await signIn(KEY_A);
    const b = await signIn(KEY_B);
    const ref = `console-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    hooks.answerNext(400); // the first callback is refused: given up at once (4xx is not retried)
    const created = await fetch(url('/applications'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` },
      body: JSON.stringify({
        merchantReference: ref,
        redirectUrl: 'https://shop.example/done',
        callbackUrl: hooks.url,
      }),
    });
    expect(created.status).toBe(201);

    const page = await eventually(async () => {
      const page = await text(await get(`/console/applications/${ref}`, a.cookie));
      return page.includes('<th scope="row">') && page.includes('failed') ? page : undefined;
    });
    expect(page).toMatch(/<td>400<\/td>/); // the merchant's HTTP status
    expect(page).toContain('learned from <strong>the bank&#39;s answer to the create</strong>');
    const key = /name="key" value="([^"]+)"/.exec(page)![1]!;
    expect(key).toBe(
      `${financeApplicationWorkflowId('shop-a', ref)}:${/<th scope="row">([^<]+)<\/th>/.exec(page)![1]}`,
    );
    const firstId = hooks.received.at(-1)!.headers['webhook-id'];

    // B: not found, neither the page, nor its live fragment, nor a resend; not in B's list.
    expect((await get(`/console/applications/${ref}`, b.cookie)).status).toBe(404);
    expect((await get(`/console/applications/${ref}/timeline`, b.cookie)).status).toBe(404);
    expect((await post(`/console/applications/${ref}/callbacks/resend`, { csrf: b.csrf, key }, b.cookie)).status).toBe(
      404,
    );
    await eventually(async () =>
      (await text(await get(`/console/applications?reference=${ref}`, a.cookie))).includes(
        `href="/console/applications/${ref}"`,
      )
        ? true
        : undefined,
    );
    expect(await text(await get(`/console/applications?reference=${ref}`, b.cookie))).toContain(
      'No applications match',
    );

    // CSRF: no token, another session's token, another origin: refused.
    const received = hooks.received.length;
    expect((await post(`/console/applications/${ref}/callbacks/resend`, { key }, a.cookie)).status).toBe(403);
    expect((await post(`/console/applications/${ref}/callbacks/resend`, { key, csrf: b.csrf }, a.cookie)).status).toBe(
      403,
    );
    expect(
      (
        await post(`/console/applications/${ref}/callbacks/resend`, { key, csrf: a.csrf }, a.cookie, {
          origin: 'http://evil.example',
        })
      ).status,
    ).toBe(403);
    expect(hooks.received.length).toBe(received);

    const resent = await post(`/console/applications/${ref}/callbacks/resend`, { key, csrf: a.csrf }, a.cookie);
    expect(resent.status).toBe(303);
    expect(resent.headers.get('location')).toBe(`/console/applications/${ref}`);
    const after = await eventually(async () => {
      const page = await text(await get(`/console/applications/${ref}`, a.cookie));
      return page.includes('Last resend: delivered') ? page : undefined;
    });
    expect(after).toContain('HTTP 200');
    expect(hooks.received.at(-1)!.headers['webhook-id']).toBe(firstId); // the same idempotency key

    // The resend's own workflow, for the replay test (test/replay/consent-replay.test.ts replays it with the others).
    await recordConsentHistory(
      'callback-redelivery-delivered',
      stack.t.client.workflow.getHandle(callbackRedeliveryWorkflowId(key)),
    );
    if (process.env.RECORD_HISTORIES === '1') {
      const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId('shop-a', ref));
      await handle.terminate('recorded');
      recordFinanceHistory(await handle.fetchHistory(), 'callback-refused-recorded');
    }
  });

  it("shows A's consent refresh per bank, live; B gets 404", async () => {
    const a = await signIn(KEY_A);
    const b = await signIn(KEY_B);
    const consentId = `console-consent-${randomUUID()}`;
    stack.sandbox.control.setConsent(consentId, {
      banks: [
        { bankCode: 'FAST', bankName: 'Fast Bank', accounts: ['f-1', 'f-2'] },
        { bankCode: 'QUIET', bankName: 'Quiet Bank', accounts: ['q-1'], neverAnswers: true },
      ],
    });
    const facade = (path: string, init: RequestInit) =>
      fetch(url(path), { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` } });
    // Two merchants: an operator assigns the consent (CONSENT_ASSIGNMENT's default), then its owner refreshes it.
    const assigned = await fetch(url(`/operator/consents/${consentId}`), {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.operatorKey}` },
      body: JSON.stringify({ merchantId: 'shop-a' }),
    });
    expect(assigned.status).toBe(201);
    const started = await facade(`/consents/${consentId}/refresh`, {
      method: 'POST',
      body: JSON.stringify({ expectedBankCodes: ['FAST', 'QUIET'], timeout: '2m' }),
    });
    expect(started.status).toBe(202);

    const page = await eventually(async () => {
      const html = await text(await get(`/console/consents?consentId=${consentId}`, a.cookie));
      return html.includes('Fast Bank (FAST)') ? html : undefined;
    });
    expect(page).toContain('<th scope="row">QUIET</th><td>waiting</td>');
    expect(page).toContain('In progress');
    const fingerprint = /data-fingerprint="([^"]+)"/.exec(page)![1]!;
    // The live part answers at once when what the page shows is not what it holds.
    const live = await get(`/console/consents/${consentId}/refresh?since=stale`, a.cookie);
    expect(live.status).toBe(200);
    expect(live.headers.get('x-console-fingerprint')).toBe(fingerprint);
    expect(live.headers.get('x-console-done')).toBe('false');

    expect((await get(`/console/consents?consentId=${consentId}`, b.cookie)).status).toBe(404);
    expect((await get(`/console/consents/${consentId}/refresh`, b.cookie)).status).toBe(404);
    await stack.t.client.workflow
      .getHandle(`consent-refresh:${consentId}`)
      .terminate('test done')
      .catch(() => undefined);
  });

  it("caps each merchant's sessions: A signing in again and again ends A's own oldest, never B's", async () => {
    const signedIn = async (cookie: string) => (await get('/console/applications', cookie)).status === 200;
    const b = await signIn(KEY_B);
    const a: string[] = [];
    for (let i = 0; i < SESSIONS_PER_MERCHANT * 3; i++) {
      const res = await post('/console/sign-in', { key: KEY_A });
      expect(res.status).toBe(303); // a sign-in with the right key always succeeds
      a.push(res.headers.get('set-cookie')!.split(';')[0]!);
    }
    expect(await signedIn(b.cookie)).toBe(true);
    // A's newest SESSIONS_PER_MERCHANT live on; every older one of A's ended.
    const live = await Promise.all(a.map(signedIn));
    expect(live).toEqual(a.map((_, i) => i >= a.length - SESSIONS_PER_MERCHANT));
    expect((await get('/console/applications', a[0])).headers.get('location')).toBe('/console/sign-in');
  });

  it('signs out only with the CSRF token, and the session is gone', async () => {
    const a = await signIn(KEY_A);
    expect((await post('/console/sign-out', {}, a.cookie)).status).toBe(403);
    const out = await post('/console/sign-out', { csrf: a.csrf }, a.cookie);
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await get('/console/applications', a.cookie)).headers.get('location')).toBe('/console/sign-in');
  });
});
