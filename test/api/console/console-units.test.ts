/**
 * The console's plain parts: sessions (idle and absolute lifetimes, the cap, the CSRF token), HTML escaping, the
 * cookie parser, and the bounded record of callback deliveries with what a failure says.
 */
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { ConsoleSessions, csrfMatches } from '../../../src/api/resources/console/sessions';
import { escapeHtml, html } from '../../../src/api/resources/console/html';
import { cookieValue } from '../../../src/api/resources/console/context';
import {
  callbackFailureDetails,
  MAX_CALLBACK_DELIVERIES_KEPT,
  withDelivery,
  type CallbackDelivery,
} from '../../../src/shared/merchant-callbacks';
import { deliveredRecord, failedRecord } from '../../../src/workflows/finance-application/callback-deliveries';

describe('console sessions', () => {
  const limits = { idleMs: 1_000, absoluteMs: 5_000, maxSessionsPerMerchant: 2 };
  it("keeps a session while used, ends it when idle or too old, and drops the merchant's least recently used beyond its cap", () => {
    let now = 0;
    const sessions = new ConsoleSessions(limits, () => now);
    const a = sessions.create('shop-a');
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrfToken).not.toBe(a.id);
    now = 900;
    expect(sessions.get(a.id)?.merchantId).toBe('shop-a');
    now = 1_800; // 900 ms since the last use
    expect(sessions.get(a.id)).toBeDefined();
    now = 2_900; // idle too long
    expect(sessions.get(a.id)).toBeUndefined();

    now = 0;
    const b = sessions.create('shop-b');
    for (now = 900; now <= 5_000; now += 900) expect(sessions.get(b.id)).toBeDefined();
    now = 5_400; // used, but signed in over 5 s ago
    expect(sessions.get(b.id)).toBeUndefined();

    const c = sessions.create('c');
    const d = sessions.create('c');
    sessions.get(c.id); // c used last: d is the merchant's least recently used
    const e = sessions.create('c');
    expect(sessions.size).toBe(2);
    expect(sessions.get(d.id)).toBeUndefined();
    expect(sessions.get(c.id)).toBeDefined();
    expect(sessions.get(e.id)).toBeDefined();
    expect(sessions.get('not-an-id')).toBeUndefined();
    expect(sessions.get(undefined)).toBeUndefined();
  });

  it("never ends another merchant's session: one merchant signing in without end only replaces its own", () => {
    let now = 0;
    const sessions = new ConsoleSessions({ ...limits, idleMs: 60_000, absoluteMs: 600_000 }, () => now);
    const b = sessions.create('shop-b');
    const others = [sessions.create('shop-c'), sessions.create('shop-c')];
    let last = sessions.create('shop-a');
    for (let i = 0; i < 20_000; i++) last = sessions.create('shop-a');
    // Every other merchant still signed in; shop-a holds its cap, its newest among them.
    expect(sessions.get(b.id)?.merchantId).toBe('shop-b');
    for (const s of others) expect(sessions.get(s.id)?.merchantId).toBe('shop-c');
    expect(sessions.get(last.id)?.merchantId).toBe('shop-a');
    expect(sessions.size).toBe(1 + 2 + 2);
    // A merchant's expired sessions go first when it signs in again, not a live one; sign-out frees its place.
    now = 61_000;
    const fresh = sessions.create('shop-b');
    expect(sessions.size).toBe(1 + 2 + 2);
    sessions.get(fresh.id);
    sessions.delete(fresh.id);
    expect(sessions.get(fresh.id)).toBeUndefined();
    expect(sessions.size).toBe(2 + 2);
  });

  it('takes only the session’s own CSRF token', () => {
    const sessions = new ConsoleSessions();
    const a = sessions.create('shop-a');
    const b = sessions.create('shop-b');
    expect(csrfMatches(a, a.csrfToken)).toBe(true);
    expect(csrfMatches(a, b.csrfToken)).toBe(false);
    expect(csrfMatches(a, undefined)).toBe(false);
    expect(csrfMatches(a, ['x'])).toBe(false);
    expect(csrfMatches(a, '')).toBe(false);
  });
});

describe('console HTML', () => {
  it('escapes every interpolated value, keeps built markup, and drops null/false', () => {
    expect(escapeHtml(`<script>"'&`)).toBe('&lt;script&gt;&quot;&#39;&amp;');
    const evil = `"><script>alert(1)</script>`;
    expect(html`<p title="${evil}">${evil}</p>`.text).toBe(
      '<p title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</p>',
    );
    expect(
      html`<ul>
        ${['a<', 'b'].map((x) => html`<li>${x}</li>`)}
      </ul>`.text.replace(/>\s+</g, '><'),
    ).toBe('<ul><li>a&lt;</li><li>b</li></ul>');
    expect(html`${null}${undefined}${false}${0}`.text).toBe('0');
  });

  it('reads one cookie from a Cookie header', () => {
    expect(cookieValue('a=1; paylater_console=abc; b=2', 'paylater_console')).toBe('abc');
    expect(cookieValue('xpaylater_console=abc', 'paylater_console')).toBeUndefined();
    expect(cookieValue(undefined, 'paylater_console')).toBeUndefined();
  });
});

describe('callback delivery records', () => {
  const sent = { idempotencyKey: 'wf:APPROVED', about: 'APPROVED', url: 'https://shop.example/hook', event: { a: 1 } };
  it('keeps the newest MAX_CALLBACK_DELIVERIES_KEPT, oldest first', () => {
    let list: CallbackDelivery[] | undefined;
    for (let i = 0; i < MAX_CALLBACK_DELIVERIES_KEPT + 3; i++)
      list = withDelivery(list, deliveredRecord({ ...sent, about: String(i) }, { status: 200, attempt: 1 }, 'now'));
    expect(list).toHaveLength(MAX_CALLBACK_DELIVERIES_KEPT);
    expect(list![0]!.about).toBe('3');
    expect(list!.at(-1)!.about).toBe(String(MAX_CALLBACK_DELIVERIES_KEPT + 2));
  });

  it('records a delivery with its status and attempt, and a failure with what its details say', () => {
    expect(deliveredRecord(sent, { status: 204, attempt: 2 }, 't')).toMatchObject({
      outcome: 'delivered',
      httpStatus: 204,
      attempts: 2,
    });
    // An older worker's result: no attempt.
    expect(deliveredRecord(sent, { status: 200 }, 't')).not.toHaveProperty('attempts');
    const rejected = ApplicationFailure.create({
      type: 'MerchantCallbackRejected',
      message: 'merchant callback answered HTTP 410',
      nonRetryable: true,
      details: [{ status: 410, attempt: 3 }],
    });
    const failure = new ActivityFailure(
      'failed',
      'notifyMerchant',
      '1',
      RetryState.NON_RETRYABLE_FAILURE,
      undefined,
      rejected,
    );
    expect(failedRecord(sent, failure, 't')).toMatchObject({
      outcome: 'failed',
      httpStatus: 410,
      attempts: 3,
      failureType: 'MerchantCallbackRejected',
      message: 'merchant callback answered HTTP 410',
    });
    // A network failure: neither status nor attempt.
    const network = failedRecord(
      sent,
      ApplicationFailure.create({ type: 'MerchantCallbackUnavailable', message: 'ECONNREFUSED' }),
      't',
    );
    expect(network).not.toHaveProperty('httpStatus');
    expect(callbackFailureDetails([{ status: '500' }])).toEqual({});
    expect(callbackFailureDetails(undefined)).toEqual({});
  });
});
