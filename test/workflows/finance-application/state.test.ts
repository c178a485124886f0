import { FinanceApplication, learnedAt, resolveSettings } from '../../../src/workflows/finance-application/state';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);

function created(notifies = false) {
  const { settings } = resolveSettings();
  const app = new FinanceApplication('order-1', settings, { now: T0, notifies });
  app.created({ financeApplicationId: 'fa-1', status: 'CREATED' }, at(0));
  return app;
}

/** The decisions of the finance-application workflow, without a server (the workflow tests run them for real). */
describe('FinanceApplication (plain state object)', () => {
  it('records forward-only statuses once, each resetting the poll policy’s clock', () => {
    const app = created(true);
    expect(app.read('IN_PROGRESS', 'poll', at(60))).toMatchObject({ status: 'IN_PROGRESS', source: 'poll' });
    expect(app.state.quietSince).toBe(at(60).toISOString());
    expect(app.read('IN_PROGRESS', 'webhook', at(70))).toBeUndefined(); // repeated
    expect(app.read('CREATED', 'poll', at(80))).toBeUndefined(); // stale
    expect(app.read('APPROVED', 'webhook', at(90))).toBeDefined();
    expect(app.state.quietSince).toBe(at(90).toISOString());
    expect(app.state.history.map((h) => h.status)).toEqual(['CREATED', 'IN_PROGRESS', 'APPROVED']);
    expect(app.state.statusReads).toBe(4);
    expect(app.unsent.map((c) => c.status)).toEqual(['CREATED', 'IN_PROGRESS', 'APPROVED']);
  });

  it('takes a status outside the order once, never going back to it', () => {
    const app = created();
    expect(app.read('ON_HOLD', 'poll', at(1))).toBeDefined();
    expect(app.read('APPROVED', 'poll', at(2))).toBeDefined();
    expect(app.read('ON_HOLD', 'poll', at(3))).toBeUndefined();
  });

  it('coalesces webhooks, counts foreign ids, and learns from its own that webhooks are live', () => {
    const app = created();
    expect(app.hasWebhooks()).toBe(false);
    for (const id of ['fa-1', 'fa-1', 'fa-other']) app.receiveWebhook(id);
    expect(app.takeWebhooks()).toEqual({ ours: 2, mismatched: 1 });
    expect(app.otherIdsToConfirm()).toEqual(['fa-other']); // believed only once the bank confirms it
    expect(app.hasWebhooks()).toBe(false);
    expect(app.state).toMatchObject({ webhooksReceived: 3, mismatchedWebhooks: 1, webhooksLive: true });
    expect(app.pollInput(T0).webhooksLive).toBe(true);
  });

  it('reports only another id the bank confirmed, once, to operators and the merchant', () => {
    const app = created(true);
    for (const id of ['fa-dup', 'fa-invented', 'fa-dup']) app.receiveWebhook(id);
    expect(app.takeWebhooks()).toMatchObject({ ours: 0, mismatched: 3 });
    expect(app.otherIdsToConfirm()).toEqual(['fa-dup', 'fa-invented']);
    expect(app.otherIdFound('fa-dup')).toBe(true);
    app.otherIdNotFound('fa-invented');
    expect(app.state.duplicateApplicationIds).toEqual(['fa-dup']);
    expect(app.nextDuplicateReport()).toBe('fa-dup');
    expect(app.state.otherIds).toEqual({ reads: 2, notFound: 1, unchecked: 0 });
    expect(app.takeUnconfirmed()).toEqual({ notFound: 1, unchecked: 0, firstInRun: true });
    // The duplicate's later webhooks and the invented id again: no read, the invented one counted.
    app.receiveWebhook('fa-dup');
    app.receiveWebhook('fa-invented');
    app.takeWebhooks();
    expect(app.otherIdsToConfirm()).toEqual([]);
    expect(app.takeUnconfirmed()).toEqual({ notFound: 1, unchecked: 0, firstInRun: false });
    expect(app.unsentDuplicates).toEqual(['fa-dup']);
    expect(app.details(Date.parse('2026-01-01T00:00:00Z'))).toContain('2 unknown to the bank');
  });

  it('drops the bank’s echo of our webhookUrl from the create answer and from a snapshot of a run from before', () => {
    const { settings } = resolveSettings();
    const app = new FinanceApplication('order-1', settings, { now: T0, notifies: false });
    app.created({ financeApplicationId: 'fa-1', status: 'CREATED', webhookUrl: 'https://x/webhooks/h' }, at(0));
    expect(app.state.bank).toEqual({ financeApplicationId: 'fa-1', status: 'CREATED' });
    const old = {
      state: { ...app.state, bank: { financeApplicationId: 'fa-1', webhookUrl: 'https://x/webhooks/h' } },
      unsentNotifications: [],
      pendingWebhookIds: [],
    };
    const next = new FinanceApplication('order-1', settings, { now: T0, carried: old, notifies: false });
    expect(next.state.bank).toEqual({ financeApplicationId: 'fa-1' });
  });

  it('hands the polling activity what it needs: seen statuses, the clock, the policy', () => {
    const app = created();
    app.read('IN_PROGRESS', 'poll', at(30));
    expect(app.pollInput(T0 + 99_000)).toEqual({
      seenStatuses: ['CREATED', 'IN_PROGRESS'],
      quietSince: at(30).toISOString(),
      webhooksLive: false,
      policy: {
        fastIntervalMs: 30_000,
        responsiveWindowMs: 300_000,
        backoffFactor: 2,
        maxIntervalMs: 900_000,
        maxIntervalWithoutWebhooksMs: 300_000,
      },
    });
  });

  it('knows a terminal status and its deadline', () => {
    const app = created();
    expect(app.isTerminal()).toBe(false);
    expect(app.deadline()).toBe(T0 + 30 * 24 * 3_600_000);
    app.read('COMPLETED', 'webhook', at(5));
    expect(app.isTerminal()).toBe(true);
    app.finish('terminal');
    expect(app.state).toMatchObject({ done: true, outcome: 'terminal' });
    expect(app.details(Date.parse('2026-01-01T00:00:00Z'))).toContain('**COMPLETED**, finished (terminal)');
  });

  it('ends following at a terminal status first, then at the deadline (its time, or its timer fired)', () => {
    const app = created();
    const deadline = T0 + 30 * 24 * 3_600_000;
    expect(app.endsNow(T0 + 1000)).toBeUndefined();
    expect(app.endsNow(T0 + 1000, true)).toBe('deadline');
    expect(app.endsNow(deadline)).toBe('deadline');
    app.read('COMPLETED', 'webhook', at(5));
    expect(app.endsNow(deadline, true)).toBe('terminal');
  });

  it('carries one snapshot across continue-as-new, including unsent callbacks and pending webhooks', () => {
    const app = created(true);
    app.receiveWebhook('fa-1');
    app.notificationDone(true);
    const next = new FinanceApplication('order-1', app.settings, {
      now: T0 + 1,
      carried: app.snapshot(),
      notifies: true,
    });
    expect(next.state.runs).toBe(2);
    expect(next.hasWebhooks()).toBe(true);
    expect(next.unsent).toEqual([]);
    expect(next.state.notificationsSent).toBe(1);
    expect(next.state.deadlineAt).toBe(app.state.deadlineAt);
  });

  it('refuses invalid settings, naming the field', () => {
    expect(resolveSettings({ fastPollIntervalMs: 0, deadlineMs: -1 }).problems).toEqual([
      'settings: fastIntervalMs must be a positive number',
      'settings.deadlineMs must be a positive number',
    ]);
  });

  it('an application the bank no longer knows: reported once, counted, given up after a day and three reads', () => {
    const app = created();
    expect(app.searchStatus()).toBe('CREATED');
    expect(app.unknownAtBank(T0 + 60_000)).toBe(true); // the first 404: report it
    expect(app.unknownAtBank(T0 + 20 * 60_000)).toBe(false);
    expect(app.state.unknownAtBank).toEqual({
      since: at(60).toISOString(),
      lastAt: at(20 * 60).toISOString(),
      reads: 2,
    });
    expect(app.state).toMatchObject({ status: 'CREATED', failedReads: 2 });
    expect(app.searchStatus()).toBe('UNKNOWN_AT_BANK');
    expect(app.details(Date.parse('2026-01-01T00:00:00Z'))).toContain('**UNKNOWN_AT_BANK** (last known CREATED)');
    const day = 24 * 3600 * 1000;
    expect(app.givesUpOnUnknown(T0 + 60_000 + day)).toBe(false); // a day, but two reads only
    app.unknownAtBank(T0 + 60_000 + day - 1);
    expect(app.givesUpOnUnknown(T0 + 60_000 + day - 2)).toBe(false); // three reads, not yet a day
    expect(app.givesUpOnUnknown(T0 + 60_000 + day)).toBe(true);
    expect(app.endsNow(T0 + 60_000 + day)).toBe('unknown_at_bank');
    // The bank knows it again: the anomaly is over, the next 404 is reported anew.
    expect(app.knownAgain()).toBe(true);
    expect(app.knownAgain()).toBe(false);
    expect(app.searchStatus()).toBe('CREATED');
    expect(app.unknownAtBank(T0 + 2 * day)).toBe(true);
  });
});

describe('learnedAt', () => {
  const t = Date.parse('2026-11-21T17:05:14.278Z');
  it("takes the read's time when the workflow's clock lags behind it (a failed-over workflow task)", () => {
    expect(learnedAt(t, '2026-11-21T17:05:25.837Z').toISOString()).toBe('2026-11-21T17:05:25.837Z');
  });
  it("keeps the workflow's time when the read is older (time-skipping) or absent (older results)", () => {
    expect(learnedAt(t, '2026-11-21T17:00:00.000Z').getTime()).toBe(t);
    expect(learnedAt(t, undefined).getTime()).toBe(t);
    expect(learnedAt(t, 'not a time').getTime()).toBe(t);
  });
});
