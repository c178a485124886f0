import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import type { AccountEventBody } from '../../../src/shared/bank-wire';
import {
  DEFAULT_REFRESH_QUIET_PERIOD,
  DEFAULT_REFRESH_TIMEOUT,
  REFRESH_NOT_STARTED,
} from '../../../src/shared/consent-refresh';
import {
  ConsentRefresh,
  isNotStarted,
  notStartedMessage,
  resolveRefreshSettings,
} from '../../../src/workflows/consent-refresh/refresh';
import { refreshDetails } from '../../../src/workflows/consent-refresh/details';

/** The consent refresh's state and decisions (plain code; the workflow passes workflow time in). */
describe('ConsentRefresh', () => {
  const consentId = 'consent-1';
  const event = (taskId: string, bankCode: string, taskStatus = 'FINISHED'): AccountEventBody => ({
    consentId,
    taskId,
    taskStatus,
    bankCode,
    bankName: `Bank ${bankCode}`,
    accounts: [{ accountId: `${bankCode}-1`, eventType: 'ADDED', extra: 'dropped' }],
  });

  describe('resolveRefreshSettings', () => {
    it('deduplicates the expected banks, with no quiet period unless asked for', () => {
      const s = resolveRefreshSettings({ merchantId: 'test', consentId, expectedBankCodes: ['B', 'A', 'B'] });
      expect(s).toEqual({
        expected: ['B', 'A'],
        knownGiven: undefined,
        known: undefined,
        quietPeriod: undefined,
        timeout: DEFAULT_REFRESH_TIMEOUT,
      });
    });

    it('without expected banks: the default quiet period, and the learned banks (sorted) hold it open', () => {
      const s = resolveRefreshSettings({ merchantId: 'test', consentId, knownBankCodes: ['C', 'A', 'C'] });
      expect(s.quietPeriod).toBe(DEFAULT_REFRESH_QUIET_PERIOD);
      expect(s.knownGiven).toEqual(['A', 'C']);
      expect(s.known).toEqual(['A', 'C']);
    });

    it('carries learned banks but does not wait for them when the merchant named the banks', () => {
      const s = resolveRefreshSettings({
        merchantId: 'test',
        consentId,
        expectedBankCodes: ['A'],
        knownBankCodes: ['B'],
      });
      expect(s.knownGiven).toEqual(['B']);
      expect(s.known).toBeUndefined();
    });
  });

  describe('accountEvents', () => {
    it('keeps events until PUT /refresh answered, then records them as of that time', () => {
      const refresh = new ConsentRefresh({ merchantId: 'test', consentId, expectedBankCodes: ['A', 'B'] });
      expect(refresh.receive(event('t1', 'A'), 1_000)).toBe('early');
      expect(refresh.reportedCount).toBe(0);
      expect(refresh.started('t1', 5_000)).toEqual([{ event: event('t1', 'A'), outcome: 'new-bank' }]);
      expect(refresh.lastNewBankAt).toBe(5_000);
      expect(refresh.progress().banks).toEqual([
        {
          bankCode: 'A',
          bankName: 'Bank A',
          taskStatus: 'FINISHED',
          succeeded: true,
          accounts: [{ accountId: 'A-1', eventType: 'ADDED' }],
          at: new Date(5_000).toISOString(),
        },
      ]);
      expect(refresh.missing()).toEqual(['B']);
      expect(refresh.allExpectedReported()).toBe(false);
    });

    it("records a bank's failure status as its result, counts duplicates, and ends with all expected banks", () => {
      const refresh = new ConsentRefresh({ merchantId: 'test', consentId, expectedBankCodes: ['A', 'B'] });
      refresh.started('t1', 0);
      expect(refresh.receive(event('t1', 'A', 'FAILED'), 10)).toBe('new-bank');
      expect(refresh.receive(event('t1', 'A'), 20)).toBe('duplicate');
      expect(refresh.lastNewBankAt).toBe(10);
      expect(refresh.receive(event('t1', 'B'), 30)).toBe('new-bank');
      expect(refresh.allExpectedReported()).toBe(true);
      const p = refresh.progress();
      expect(p.banks.map((b) => [b.bankCode, b.succeeded])).toEqual([
        ['A', false],
        ['B', true],
      ]);
      expect(p.duplicateEvents).toBe(1);
    });

    it("hands another task's event, and any event after the close, to the late workflow", () => {
      const refresh = new ConsentRefresh({ merchantId: 'test', consentId });
      refresh.started('t1', 0);
      expect(refresh.receive(event('t0', 'A'), 10)).toBe('stale');
      refresh.done = true;
      expect(refresh.receive(event('t1', 'B'), 20)).toBe('after-close');
      expect(refresh.handOff).toEqual([
        { event: event('t0', 'A'), reason: 'other-task' },
        { event: event('t1', 'B'), reason: 'refresh-closed' },
      ]);
      expect(refresh.staleEvents).toBe(1);
      expect(refresh.reportedCount).toBe(0);
    });
  });

  describe('PUT /refresh failed', () => {
    it("hands the events that came meanwhile on as another task's (no task of ours exists)", () => {
      const refresh = new ConsentRefresh({ merchantId: 'test', consentId });
      refresh.receive(event('t0', 'A'), 0);
      refresh.notStarted('PUT /refresh failed: 503');
      expect(refresh.done).toBe(true);
      expect(refresh.handOff).toEqual([{ event: event('t0', 'A'), reason: 'other-task' }]);
      expect(refresh.progress()).toMatchObject({ done: true, error: 'PUT /refresh failed: 503', taskId: undefined });
    });

    it("reports the bank's reason from an activity failure's cause, and its own timeout failure as it is", () => {
      const cause = ApplicationFailure.create({ message: 'bank said 503' });
      const activity = new ActivityFailure(
        'failed',
        'startRefresh',
        '1',
        RetryState.MAXIMUM_ATTEMPTS_REACHED,
        '',
        cause,
      );
      expect(notStartedMessage(activity)).toBe('PUT /refresh failed: bank said 503');
      const ours = ApplicationFailure.create({ type: REFRESH_NOT_STARTED, message: 'did not answer' });
      expect(isNotStarted(ours)).toBe(true);
      expect(notStartedMessage(ours)).toBe('did not answer');
      expect(isNotStarted(new Error('x'))).toBe(false);
      expect(notStartedMessage(new Error('boom'))).toBe('PUT /refresh failed: Error: boom');
    });
  });

  describe('progress, result and the fan-in view', () => {
    it('lists learned banks that never reported as missing, and carries them in the result', () => {
      const refresh = new ConsentRefresh({ merchantId: 'test', consentId, knownBankCodes: ['A', 'B'] });
      refresh.started('t1', 0);
      refresh.receive(event('t1', 'A'), 100);
      refresh.endedBy = 'timeout';
      refresh.done = true;
      expect(refresh.result()).toEqual({
        consentId,
        taskId: 't1',
        done: true,
        banks: [expect.objectContaining({ bankCode: 'A' })],
        missing: ['B'],
        staleEvents: 0,
        duplicateEvents: 0,
        endedBy: 'timeout',
        knownBankCodes: ['A', 'B'],
        handedOffEvents: 0,
      });
      expect(refresh.fanInView(500)).toEqual({
        expectedBankCodes: undefined,
        knownBankCodes: ['A', 'B'],
        reported: new Set(['A']),
        timedOut: false,
        quietPeriodMs: 30_000,
        lastNewBankAt: 100,
        quietRestartedAt: 500,
      });
    });

    it('shows reported, missing, handed-off and ignored events in the Web UI details', () => {
      const refresh = new ConsentRefresh({ merchantId: 'test', consentId, knownBankCodes: ['B'] });
      refresh.started('t1', 0);
      refresh.receive(event('t1', 'A'), 0);
      refresh.receive(event('t1', 'A'), 0);
      refresh.handedOffEvents = 2;
      const text = refreshDetails(refresh.progress(), 'Waiting for banks');
      expect(text.split('\n')).toEqual([
        '**Waiting for banks** — consent `consent-1`, task `t1`',
        `- ✅ A (Bank A): FINISHED, 1 account(s) at ${new Date(0).toISOString()}`,
        '- ⏳ not reported: B (learned from earlier refreshes)',
        "- ↪ handed to the consent's late bank reports: 2",
        '- ignored: 0 stale, 1 duplicate',
      ]);
    });
  });
});
