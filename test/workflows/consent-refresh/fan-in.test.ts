import {
  QUIET_PERIOD_LATE_TIMER_THRESHOLD_MS,
  missingKnownBanks,
  nextFanInStep,
  onQuietPeriodTimer,
  type FanInView,
} from '../../../src/workflows/consent-refresh/fan-in';

/** The consent refresh's fan-in decisions (plain functions; the workflow passes workflow time in). */
describe('consent refresh fan-in decisions', () => {
  const view = (over: Partial<FanInView> = {}): FanInView => ({
    reported: new Set<string>(),
    timedOut: false,
    quietPeriodMs: 1_000,
    ...over,
  });

  describe('nextFanInStep', () => {
    it('ends when every expected bank reported, before looking at the timeout', () => {
      const reported = new Set(['A', 'B']);
      expect(nextFanInStep(view({ expectedBankCodes: ['A', 'B'], reported, timedOut: true }))).toEqual({
        kind: 'end',
        endedBy: 'all-reported',
      });
    });

    it('ends at the timeout otherwise, learned banks missing or not', () => {
      expect(nextFanInStep(view({ knownBankCodes: ['A'], timedOut: true }))).toEqual({
        kind: 'end',
        endedBy: 'timeout',
      });
      expect(nextFanInStep(view({ expectedBankCodes: ['A'], timedOut: true }))).toEqual({
        kind: 'end',
        endedBy: 'timeout',
      });
    });

    it('has no quiet-period timer before the first bank, nor without a quiet period', () => {
      expect(nextFanInStep(view())).toEqual({ kind: 'wait' });
      expect(
        nextFanInStep(view({ quietPeriodMs: undefined, reported: new Set(['A']), lastNewBankAt: 10_000 })),
      ).toEqual({ kind: 'wait' });
    });

    it('runs the quiet period from the last new bank', () => {
      expect(nextFanInStep(view({ reported: new Set(['A']), lastNewBankAt: 10_000 }))).toEqual({
        kind: 'quiet',
        dueAt: 11_000,
      });
    });

    it('does not let the quiet period run while a learned bank is missing', () => {
      const known = ['A', 'B', 'C'];
      expect(
        nextFanInStep(view({ knownBankCodes: known, reported: new Set(['A', 'B']), lastNewBankAt: 10_000 })),
      ).toEqual({ kind: 'wait' });
      // All learned banks in: the quiet period runs from the last one (a newly linked bank still has its chance).
      expect(
        nextFanInStep(view({ knownBankCodes: known, reported: new Set(['A', 'B', 'C']), lastNewBankAt: 12_000 })),
      ).toEqual({ kind: 'quiet', dueAt: 13_000 });
    });

    it('ignores learned banks when the merchant named the banks (they override)', () => {
      expect(
        nextFanInStep(
          view({ expectedBankCodes: ['A', 'X'], knownBankCodes: ['B'], reported: new Set(['A']), lastNewBankAt: 5 }),
        ),
      ).toEqual({ kind: 'quiet', dueAt: 1_005 });
      expect(missingKnownBanks({ expectedBankCodes: ['A'], knownBankCodes: ['B'], reported: new Set() })).toEqual([]);
      expect(missingKnownBanks({ knownBankCodes: ['A', 'B'], reported: new Set(['B']) })).toEqual(['A']);
    });

    it('counts the quiet period from the end of an outage when that is later than the last bank', () => {
      const reported = new Set(['A']);
      expect(nextFanInStep(view({ reported, lastNewBankAt: 10_000, quietRestartedAt: 30_000 }))).toEqual({
        kind: 'quiet',
        dueAt: 31_000,
      });
      expect(nextFanInStep(view({ reported, lastNewBankAt: 40_000, quietRestartedAt: 30_000 }))).toEqual({
        kind: 'quiet',
        dueAt: 41_000,
      });
    });
  });

  describe('onQuietPeriodTimer (the late-timer rule)', () => {
    it('closes when the timer fired on time, or late by no more than the threshold', () => {
      expect(onQuietPeriodTimer({ dueAt: 10_000, now: 10_000 })).toEqual({ close: true });
      expect(onQuietPeriodTimer({ dueAt: 10_000, now: 10_000 + QUIET_PERIOD_LATE_TIMER_THRESHOLD_MS })).toEqual({
        close: true,
      });
    });

    it('restarts the quiet period from now when the timer fired noticeably late (an outage)', () => {
      const now = 10_000 + QUIET_PERIOD_LATE_TIMER_THRESHOLD_MS + 1;
      expect(onQuietPeriodTimer({ dueAt: 10_000, now })).toEqual({
        close: false,
        restartAt: now,
        lateByMs: QUIET_PERIOD_LATE_TIMER_THRESHOLD_MS + 1,
      });
      expect(onQuietPeriodTimer({ dueAt: 10_000, now: 70_000, lateThresholdMs: 60_000 })).toEqual({ close: true });
    });

    it('after a restart, the next step is due one quiet period after the outage ended', () => {
      const fired = onQuietPeriodTimer({ dueAt: 11_000, now: 45_000 });
      expect(fired.close).toBe(false);
      const restartAt = fired.close ? undefined : fired.restartAt;
      expect(
        nextFanInStep(view({ reported: new Set(['A']), lastNewBankAt: 10_000, quietRestartedAt: restartAt })),
      ).toEqual({ kind: 'quiet', dueAt: 46_000 });
    });
  });
});
