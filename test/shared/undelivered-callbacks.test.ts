import {
  CallbackLedger,
  callbackRetry,
  MAX_UNDELIVERED_KEPT,
  type CallbackReport,
} from '../../src/shared/undelivered-callbacks';

describe('callbackRetry: the retry window decides, the backoff spaces the attempts', () => {
  const base = { firstScheduledMs: 0, windowMs: 60_000 };
  it('retries with the backoff (5 s doubling, at most 10 minutes) while the window lasts', () => {
    expect(callbackRetry({ ...base, attempt: 1, nowMs: 100 })).toEqual({ giveUp: false, nextRetryDelayMs: 5_000 });
    expect(callbackRetry({ ...base, attempt: 3, nowMs: 100 })).toEqual({ giveUp: false, nextRetryDelayMs: 20_000 });
    expect(callbackRetry({ firstScheduledMs: 0, windowMs: 3 * 86_400_000, attempt: 20, nowMs: 1_000 })).toEqual({
      giveUp: false,
      nextRetryDelayMs: 600_000,
    });
  });
  it("cuts the last delay to the window's end, and honours the merchant's Retry-After within it", () => {
    expect(callbackRetry({ ...base, attempt: 4, nowMs: 50_000 })).toEqual({ giveUp: false, nextRetryDelayMs: 10_000 });
    expect(callbackRetry({ ...base, attempt: 1, nowMs: 0, requestedDelayMs: 30_000 })).toEqual({
      giveUp: false,
      nextRetryDelayMs: 30_000,
    });
  });
  it('gives up once the window has passed', () => {
    expect(callbackRetry({ ...base, attempt: 5, nowMs: 60_000 })).toEqual({ giveUp: true });
    expect(callbackRetry({ ...base, attempt: 5, nowMs: 90_000 })).toEqual({ giveUp: true });
  });
});

describe('CallbackLedger: what a merchant has not received', () => {
  const report = (key: string, outcome: CallbackReport['outcome'], at: string, type = 'a.b'): CallbackReport => ({
    idempotencyKey: key,
    outcome,
    at,
    ...(outcome === 'delivered' ? {} : { type, url: 'https://x.example/h', event: { type }, firstAttemptAt: at }),
  });

  it('adds on a failure, gives up, and forgets a delivered one; a late `retrying` never undoes a give-up', () => {
    const ledger = new CallbackLedger();
    ledger.record(report('k1', 'retrying', '2026-01-01T00:00:00.000Z'));
    ledger.record(report('k1', 'given-up', '2026-01-01T00:00:05.000Z'));
    ledger.record(report('k1', 'retrying', '2026-01-01T00:00:06.000Z'));
    const [entry] = ledger.page({ limit: 10 }).callbacks;
    expect(entry).toMatchObject({ state: 'given-up', firstAttemptAt: '2026-01-01T00:00:00.000Z' });
    ledger.record(report('k1', 'delivered', '2026-01-01T00:01:00.000Z'));
    expect(ledger.size).toBe(0);
    // A delivery of a key it never had changes nothing.
    ledger.record(report('k2', 'delivered', '2026-01-01T00:01:00.000Z'));
    expect(ledger.size).toBe(0);
  });

  it('filters by time, type and state, pages oldest first, and survives a snapshot', () => {
    const ledger = new CallbackLedger();
    for (let i = 0; i < 5; i++) ledger.record(report(`k${i}`, 'given-up', `2026-01-0${i + 1}T00:00:00.000Z`));
    ledger.record(report('t1', 'retrying', '2026-01-03T12:00:00.000Z', 'c.d'));
    expect(ledger.page({ limit: 10, type: 'c.d' }).callbacks.map((e) => e.idempotencyKey)).toEqual(['t1']);
    expect(ledger.page({ limit: 10, state: 'retrying' }).callbacks).toHaveLength(1);
    const ranged = ledger.page({ limit: 10, since: '2026-01-02T00:00:00.000Z', until: '2026-01-04T00:00:00.000Z' });
    expect(ranged.callbacks.map((e) => e.idempotencyKey)).toEqual(['k1', 'k2', 't1']);
    const first = ledger.page({ limit: 4 });
    expect(first.callbacks.map((e) => e.idempotencyKey)).toEqual(['k0', 'k1', 'k2', 't1']);
    const second = new CallbackLedger(ledger.snapshot()).page({ limit: 4, after: first.next });
    expect(second.callbacks.map((e) => e.idempotencyKey)).toEqual(['k3', 'k4']);
    expect(second.next).toBeUndefined();
  });

  it('keeps at most MAX_UNDELIVERED_KEPT, dropping the oldest and counting them', () => {
    const ledger = new CallbackLedger();
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
    for (let i = 0; i < MAX_UNDELIVERED_KEPT + 3; i++) ledger.record(report(`k${i}`, 'given-up', at(i)));
    const page = ledger.page({ limit: 1 });
    expect(ledger.size).toBe(MAX_UNDELIVERED_KEPT);
    expect(page.dropped).toBe(3);
    expect(page.callbacks[0]!.idempotencyKey).toBe('k3');
  });
});
