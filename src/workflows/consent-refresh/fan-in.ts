import type { RefreshEndReason } from '../../shared/consent-refresh';

/**
 * The consent refresh's fan-in decisions, as plain functions of what the workflow has
 * recorded: when it ends, what it waits for, and what a quiet-period timer that fired means. No clock and no I/O:
 * the workflow passes workflow time in.
 */

/**
 * A quiet-period timer that fires this much after it was due did not measure quiet: Temporal or the workers were
 * down meanwhile, so the receiver could not deliver and the bank's retries may still be on their way. Timers
 * normally fire within milliseconds; a busy worker may add a second.
 */
export const QUIET_PERIOD_LATE_TIMER_THRESHOLD_MS = 2_000;

export interface FanInView {
  /** The merchant's expected banks: the refresh ends once all reported (and `missing` lists the others). */
  expectedBankCodes?: readonly string[];
  /** Learned banks (used only without expectedBankCodes): the quiet period cannot end the refresh while one is missing. */
  knownBankCodes?: readonly string[];
  /** Banks that reported this refresh's task. */
  reported: ReadonlySet<string>;
  timedOut: boolean;
  /** Absent: no quiet period (the merchant named the banks and no quietPeriod). */
  quietPeriodMs?: number;
  /** Workflow time (ms) of the last NEW bank; absent until the first. */
  lastNewBankAt?: number;
  /** Workflow time (ms) the quiet period was last restarted after an outage (onQuietPeriodTimer). */
  quietRestartedAt?: number;
}

export type FanInStep =
  | { kind: 'end'; endedBy: RefreshEndReason }
  /** Wait for a new bank or the timeout, no quiet-period timer. */
  | { kind: 'wait' }
  /** Wait for a new bank, the timeout, or workflow time `dueAt` (the end of the quiet period). */
  | { kind: 'quiet'; dueAt: number };

/** Learned banks that have not reported (none when the merchant named the banks). */
export function missingKnownBanks(
  view: Pick<FanInView, 'expectedBankCodes' | 'knownBankCodes' | 'reported'>,
): string[] {
  if (view.expectedBankCodes !== undefined) return [];
  return (view.knownBankCodes ?? []).filter((code) => !view.reported.has(code));
}

/**
 * What the fan-in does next. The quiet period runs from the last new bank or the end of the last outage the
 * workflow saw, whichever is later; it starts with the first bank, and not before every learned bank reported.
 */
export function nextFanInStep(view: FanInView): FanInStep {
  const expected = view.expectedBankCodes;
  if (expected !== undefined && expected.length > 0 && expected.every((code) => view.reported.has(code)))
    return { kind: 'end', endedBy: 'all-reported' };
  if (view.timedOut) return { kind: 'end', endedBy: 'timeout' };
  if (view.quietPeriodMs === undefined || view.lastNewBankAt === undefined) return { kind: 'wait' };
  if (missingKnownBanks(view).length > 0) return { kind: 'wait' };
  const since = Math.max(view.lastNewBankAt, view.quietRestartedAt ?? Number.NEGATIVE_INFINITY);
  return { kind: 'quiet', dueAt: since + view.quietPeriodMs };
}

/**
 * The quiet-period timer fired (or its due time passed) with no new bank: close, unless it fired noticeably late.
 * Then an outage ended just now, and the quiet period restarts from now, so the bank's retries get their chance.
 */
export function onQuietPeriodTimer(timer: {
  dueAt: number;
  now: number;
  lateThresholdMs?: number;
}): { close: true } | { close: false; restartAt: number; lateByMs: number } {
  const lateByMs = timer.now - timer.dueAt;
  if (lateByMs > (timer.lateThresholdMs ?? QUIET_PERIOD_LATE_TIMER_THRESHOLD_MS))
    return { close: false, restartAt: timer.now, lateByMs };
  return { close: true };
}
