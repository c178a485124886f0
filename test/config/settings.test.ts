import { loadConfig } from '../../src/config';
import { DEFAULT_SERVICE_SETTINGS } from '../../src/shared/application-settings';
import { configIssuesOf as issuesOf } from '../helpers/config';

describe('settings of new workflows from the environment', () => {
  it('defaults to the sandbox vocabulary and the built-in poll policy', () => {
    const { settings } = loadConfig({});
    expect(settings).toEqual(DEFAULT_SERVICE_SETTINGS);
    expect(settings.applications.statusOrder).toEqual({
      CREATED: 0,
      IN_PROGRESS: 1,
      APPROVED: 2,
      SIGNED: 3,
      COMPLETED: 4,
      DECLINED: 4,
      CANCELLED: 4,
      EXPIRED: 4,
    });
    expect(settings.applications.terminalStatuses).toEqual(['COMPLETED', 'DECLINED', 'CANCELLED', 'EXPIRED']);
  });

  it('takes another bank vocabulary: ranks by position, the terminal statuses share the last rank', () => {
    const { settings } = loadConfig({
      BANK_STATUS_ORDER: ' RECEIVED, UNDER_REVIEW ,OFFERED,PAID_OUT,REJECTED ',
      BANK_TERMINAL_STATUSES: 'PAID_OUT,REJECTED',
    });
    expect(settings.applications.statusOrder).toEqual({
      RECEIVED: 0,
      UNDER_REVIEW: 1,
      OFFERED: 2,
      PAID_OUT: 3,
      REJECTED: 3,
    });
    expect(settings.applications.terminalStatuses).toEqual(['PAID_OUT', 'REJECTED']);
  });

  it('takes the poll policy, the deadline, the refresh defaults and the transactionEvents window', () => {
    const { settings } = loadConfig({
      POLL_FAST_INTERVAL: '10s',
      POLL_RESPONSIVE_WINDOW: '2m',
      POLL_BACKOFF_FACTOR: '1.5',
      POLL_SLOW_INTERVAL: '1h',
      POLL_NO_WEBHOOK_INTERVAL: '20m',
      APPLICATION_DEADLINE: '7d',
      REFRESH_TIMEOUT: '5m',
      REFRESH_QUIET_PERIOD: '1500ms',
      TRANSACTION_EVENTS_WINDOW: '5000',
    });
    expect(settings.applications).toMatchObject({
      fastPollIntervalMs: 10_000,
      responsiveWindowMs: 120_000,
      pollBackoffFactor: 1.5,
      slowPollIntervalMs: 3_600_000,
      noWebhookPollIntervalMs: 1_200_000,
      deadlineMs: 7 * 86_400_000,
    });
    expect(settings.refresh).toEqual({ timeoutMs: 300_000, quietPeriodMs: 1_500 });
    expect(settings.transactionEvents).toEqual({ coalesceWindowMs: 5_000 });
  });

  it.each([
    [{ BANK_STATUS_ORDER: 'A,B,A', BANK_TERMINAL_STATUSES: 'B' }, 'BANK_STATUS_ORDER', /A more than once/],
    [
      { BANK_STATUS_ORDER: 'A,B,C', BANK_TERMINAL_STATUSES: 'C,D' },
      'BANK_TERMINAL_STATUSES',
      /D not in BANK_STATUS_ORDER/,
    ],
    [{ BANK_STATUS_ORDER: 'A,B,C', BANK_TERMINAL_STATUSES: 'C,C' }, 'BANK_TERMINAL_STATUSES', /C more than once/],
    [
      { BANK_STATUS_ORDER: 'A,DONE,B', BANK_TERMINAL_STATUSES: 'DONE' },
      'BANK_STATUS_ORDER',
      /B must come before the terminal/,
    ],
    [{ BANK_STATUS_ORDER: ' , ', BANK_TERMINAL_STATUSES: 'A' }, 'BANK_STATUS_ORDER', /at least one status/],
    [{ BANK_STATUS_ORDER: 'A,B', BANK_TERMINAL_STATUSES: ',' }, 'BANK_TERMINAL_STATUSES', /at least one status/],
    [{ BANK_STATUS_ORDER: 'A,b c', BANK_TERMINAL_STATUSES: 'A' }, 'BANK_STATUS_ORDER', /"b c": must match/],
    // One list set alone is checked against the other's default, and the set one is named.
    [{ BANK_STATUS_ORDER: 'RECEIVED,PAID_OUT' }, 'BANK_STATUS_ORDER', /COMPLETED, DECLINED, CANCELLED, EXPIRED not in/],
    [{ BANK_TERMINAL_STATUSES: 'PAID_OUT' }, 'BANK_TERMINAL_STATUSES', /PAID_OUT not in BANK_STATUS_ORDER/],
  ])('refuses an inconsistent vocabulary %#, naming the variable', (env, variable, message) => {
    const issues = issuesOf(env);
    expect(issues).toContainEqual({ variable, message: expect.stringMatching(message) });
  });

  it.each([
    ['POLL_FAST_INTERVAL', 'often', /duration such as/],
    ['POLL_FAST_INTERVAL', '100ms', /between 1s and 1h/],
    ['POLL_FAST_INTERVAL', '2h', /between 1s and 1h/],
    ['POLL_RESPONSIVE_WINDOW', '2d', /between 0ms and 1d/],
    ['POLL_BACKOFF_FACTOR', '0.5', /at least 1/],
    ['POLL_BACKOFF_FACTOR', '11', /at most 10/],
    ['POLL_BACKOFF_FACTOR', 'x', /must be a number/],
    ['POLL_SLOW_INTERVAL', '2d', /between 1s and 1d/],
    ['POLL_NO_WEBHOOK_INTERVAL', '-5s', /duration such as/],
    ['APPLICATION_DEADLINE', '30s', /between 1m and 365d/],
    ['APPLICATION_DEADLINE', '400d', /between 1m and 365d/],
    ['REFRESH_TIMEOUT', '2d', /between 1s and 1d/],
    ['REFRESH_QUIET_PERIOD', '10ms', /between 100ms and 1d/],
    ['TRANSACTION_EVENTS_WINDOW', '2h', /between 100ms and 1h/],
  ])('refuses %s=%s naming it', (variable, value, message) => {
    expect(issuesOf({ [variable]: value })).toContainEqual({ variable, message: expect.stringMatching(message) });
  });

  it('refuses poll caps below the fast interval, and a no-webhook cap above the slow one', () => {
    expect(issuesOf({ POLL_FAST_INTERVAL: '10m', POLL_SLOW_INTERVAL: '5m', POLL_NO_WEBHOOK_INTERVAL: '5m' })).toEqual(
      expect.arrayContaining([
        { variable: 'POLL_SLOW_INTERVAL', message: expect.stringMatching(/not be below the fast interval \(10m\)/) },
        {
          variable: 'POLL_NO_WEBHOOK_INTERVAL',
          message: expect.stringMatching(/not be below the fast interval \(10m\)/),
        },
      ]),
    );
    expect(issuesOf({ POLL_NO_WEBHOOK_INTERVAL: '20m' })).toEqual([
      {
        variable: 'POLL_NO_WEBHOOK_INTERVAL',
        message: expect.stringMatching(/not be above the slow interval \(15m\)/),
      },
    ]);
  });
});
