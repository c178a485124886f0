import {
  DEFAULT_POLL_POLICY,
  pollDelayMs,
  pollPolicyProblems,
  pollSchedule,
  type PollPolicy,
} from '../../src/shared/poll-policy';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const P = DEFAULT_POLL_POLICY;

/** Reads in [from, to) of a quiet application's schedule. */
const readsBetween = (at: number[], from: number, to: number) => at.filter((t) => t >= from && t < to).length;

describe('poll policy', () => {
  it('reads every 30 s for the first 5 minutes after creation or a change', () => {
    for (const quiet of [0, 10_000, 2 * MINUTE, 5 * MINUTE - 1]) expect(pollDelayMs(P, quiet, false)).toBe(30_000);
  });

  it('then doubles each interval up to 5 minutes without webhooks, 15 with', () => {
    const delays = (wh: boolean) => pollSchedule(P, 2 * HOUR, wh).map((t) => pollDelayMs(P, t, wh));
    expect(delays(false).slice(9, 15)).toEqual([30_000, 60_000, 120_000, 240_000, 300_000, 300_000]);
    expect(delays(true).slice(9, 16)).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 900_000, 900_000]);
  });

  it('meets the cost targets: ≤ 20 reads an hour from 10 minutes; after the first hour 12 (4 with webhooks)', () => {
    for (const webhooks of [false, true]) {
      const at = pollSchedule(P, 48 * HOUR, webhooks);
      for (let from = 10 * MINUTE; from < 47 * HOUR; from += 5 * MINUTE) {
        expect(readsBetween(at, from, from + HOUR)).toBeLessThanOrEqual(20);
      }
      for (let hour = 1; hour < 47; hour++) {
        expect(readsBetween(at, hour * HOUR, (hour + 1) * HOUR)).toBeLessThanOrEqual(webhooks ? 4 : 12);
      }
    }
  });

  it('never waits longer than the cap, so a change after any quiet period is found within it', () => {
    for (const quiet of [HOUR, 24 * HOUR, 30 * 24 * HOUR]) {
      expect(pollDelayMs(P, quiet, false)).toBe(P.maxIntervalWithoutWebhooksMs);
      expect(pollDelayMs(P, quiet, true)).toBe(P.maxIntervalMs);
    }
  });

  it('keeps the fast interval as a floor and the webhook cap as a ceiling of the no-webhook cap', () => {
    const slowFast: PollPolicy = { ...P, fastIntervalMs: 6 * HOUR };
    expect(pollDelayMs(slowFast, 10 * HOUR, false)).toBe(6 * HOUR);
    const lowCap: PollPolicy = { ...P, maxIntervalMs: 2 * MINUTE };
    expect(pollDelayMs(lowCap, 10 * HOUR, false)).toBe(2 * MINUTE);
    expect(pollDelayMs(P, -5_000, false)).toBe(30_000); // a clock behind quietSince reads as "just changed"
  });

  it('names each invalid field', () => {
    expect(pollPolicyProblems(P)).toEqual([]);
    expect(
      pollPolicyProblems({ ...P, fastIntervalMs: 0, backoffFactor: 0.5, responsiveWindowMs: -1, maxIntervalMs: NaN }),
    ).toEqual([
      'fastIntervalMs must be a positive number',
      'maxIntervalMs must be a positive number',
      'responsiveWindowMs must be zero or more',
      'backoffFactor must be at least 1',
    ]);
  });
});
