import { DEFAULT_POLL_POLICY } from '../../../src/shared/poll-policy';
import {
  currentDetails,
  deliveryWords,
  humanDuration,
  nextPoll,
  timerSummaries,
} from '../../../src/workflows/finance-application/details';
import { FinanceApplication, resolveSettings } from '../../../src/workflows/finance-application/state';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);

function created(notifies: boolean) {
  const app = new FinanceApplication('order-1', resolveSettings().settings, { now: T0, notifies });
  app.created({ financeApplicationId: 'fa-1', status: 'CREATED' }, at(0));
  return app;
}

/** The Web UI's current details and timer summaries of a finance application (details.ts), without a server. */
describe('finance application details', () => {
  it('says the status now, how it was learned, and when the next poll is', () => {
    const app = created(false);
    app.read('IN_PROGRESS', 'webhook', at(40));
    const text = app.details(T0 + 60_000);
    expect(text).toContain('**IN_PROGRESS**, polling with backoff until a webhook is seen');
    expect(text).toContain('Learned from a webhook at 2026-01-01 00:00:40 UTC');
    // Quiet for 20 s, inside the responsive window: the fast interval (30 s) from now.
    expect(text).toContain('Next poll about 2026-01-01 00:01:30 UTC (every 30 s now');
    expect(text).toContain('Callbacks: none (no callback URL)');
    expect(text).toContain('| IN_PROGRESS | 2026-01-01T00:00:40.000Z | webhook |');
  });

  it('follows the poll policy’s backoff', () => {
    const app = created(false);
    // An hour quiet, no webhook: capped at the no-webhook maximum (5 min).
    expect(nextPoll(app.state, DEFAULT_POLL_POLICY, T0 + 3_600_000)).toEqual({ at: T0 + 3_900_000, every: 300_000 });
  });

  it('says which callback is being sent, then delivered or given up', () => {
    const app = created(true);
    app.read('APPROVED', 'poll', at(10));
    app.sendingCallback = 'CREATED';
    const sending = app.details(T0 + 20_000);
    expect(sending).toContain('Callbacks: sending CREATED (retried until the merchant takes it or it is given up');
    expect(sending).toContain('· 1 queued ·');
    expect(sending).toContain('0 delivered, 0 given up');

    app.sendingCallback = undefined;
    app.notificationDone(true, delivery('CREATED', 'delivered', 200, 1));
    app.notificationDone(false, delivery('APPROVED', 'failed', 503, 12));
    app.finish('terminal');
    const done = app.details(T0 + 30_000);
    expect(done).toContain('**APPROVED**, finished (terminal)\n');
    expect(done).toContain('last: APPROVED gave up after 12 attempts (HTTP 503) · 1 delivered, 1 given up');
    expect(done).not.toContain('Next poll');
  });

  it('says so when the application is no longer followed but its last callback is still being sent', () => {
    const app = created(true);
    app.read('COMPLETED', 'webhook', at(10));
    app.finish('terminal');
    app.sendingCallback = 'CREATED';
    expect(app.details(T0 + 20_000)).toContain(
      '**COMPLETED**, finished (terminal); the last callbacks are still being sent',
    );
  });

  it('words deliveries, durations and every timer summary', () => {
    expect(deliveryWords({ about: 'CREATED', outcome: 'delivered', httpStatus: 204, attempts: 2 })).toBe(
      'CREATED delivered (HTTP 204, 2 attempts)',
    );
    expect(deliveryWords({ about: 'duplicate:fa-2', outcome: 'failed' })).toBe('duplicate:fa-2 gave up');
    expect([40_000, 900_000, 9_000_000, 30 * 86_400_000].map(humanDuration)).toEqual([
      '40 s',
      '15 min',
      '2 h 30 min',
      '30 days',
    ]);
    expect(timerSummaries.deadline('2026-01-31T00:00:00.000Z', 30 * 86_400_000)).toBe(
      'Deadline: stop following the application at 2026-01-31T00:00:00.000Z (in 30 days)',
    );
    expect(timerSummaries.pollAgainAfterFailure(900_000)).toBe(
      'Polling failed: start it again in 15 min (or at a webhook)',
    );
    expect(timerSummaries.statusWait('CREATED', 25_000)).toBe(
      'Status wait: answer in 25 s unless CREATED changes first',
    );
  });

  it('keeps the Web UI text of a state with no history', () => {
    const app = new FinanceApplication('order-2', resolveSettings().settings, { now: T0, notifies: false });
    expect(currentDetails({ state: app.state, policy: DEFAULT_POLL_POLICY, now: T0 })).toMatch(/^\*\*creating\*\*/);
  });
});

function delivery(about: string, outcome: 'delivered' | 'failed', httpStatus: number, attempts: number) {
  return {
    idempotencyKey: `wf:${about}`,
    about,
    outcome,
    httpStatus,
    attempts,
    at: at(25).toISOString(),
    url: 'x',
    event: {},
  };
}
