import { patched } from '@temporalio/workflow';

/**
 * The consent refresh's patches, each with its reason. Every committed history replays (test/replay), so runs
 * recorded before a patch keep their branch: the legacy fan-in is in legacy.ts, the rest is gated by the flags
 * refreshVersion() returns.
 */

/**
 * New runs (1) wait, without expectedBankCodes, for the banks learned from earlier refreshes (input knownBankCodes)
 * before the quiet period may end them, and list the learned banks that never reported as `missing`; (2) restart
 * the quiet period when its timer fired late (an outage: fan-in.ts); (3) hand every event they cannot take
 * (another task's, or one after they closed) to the consent's lateAccountEventsWorkflow instead of only counting
 * it. Runs from before keep the old fan-in (legacy.ts).
 */
export const LEARNED_BANKS_PATCH = 'refresh-learned-banks-late-reports';

/**
 * Whether a quiet-period timer fired late is decided on the worker's clock read by a local activity, recorded in
 * the history, instead of on workflow time. Workflow time at that task did not survive a replay after an outage (a
 * query on a closed refresh that had restarted its quiet period failed with a nondeterminism error; found by
 * `npm run chaos`): the recorded reading replays as it was. Runs from before keep workflow time. Asked only under
 * LEARNED_BANKS_PATCH (the only fan-in that restarts its quiet period).
 */
export const RECORDED_CLOCK_PATCH = 'quiet-period-lateness-on-recorded-clock';

/**
 * Late reports go to the consent's late workflow of the refresh's merchant (`consent-late-reports:{merchant}:{consent}`,
 * with its MerchantId), not to one keyed by the consent alone: a consent released by one merchant and claimed by
 * another must not hand the new owner's reports to the previous owner's late workflow, still open. Asked only under
 * LEARNED_BANKS_PATCH (the only fan-in that hands off) and for runs with a merchant (not those from before tenancy).
 */
export const LATE_REPORTS_PER_MERCHANT_PATCH = 'late-reports-per-merchant';

export interface RefreshVersion {
  /** LEARNED_BANKS_PATCH: learned banks, quiet period restarted after an outage, late reports handed off. */
  learnedBanks: boolean;
  /** RECORDED_CLOCK_PATCH: a late quiet-period timer is judged on a recorded clock reading. */
  recordedClock: boolean;
  /** LATE_REPORTS_PER_MERCHANT_PATCH: late reports go to the merchant's own late workflow. */
  lateReportsPerMerchant: boolean;
}

/** Asked first thing in the run, in this order: it decides the fan-in for the whole run. */
export function refreshVersion(merchantId: string | undefined): RefreshVersion {
  const learnedBanks = patched(LEARNED_BANKS_PATCH);
  const recordedClock = learnedBanks && patched(RECORDED_CLOCK_PATCH);
  const lateReportsPerMerchant = learnedBanks && merchantId !== undefined && patched(LATE_REPORTS_PER_MERCHANT_PATCH);
  return { learnedBanks, recordedClock, lateReportsPerMerchant };
}
