import { patched } from '@temporalio/workflow';

/**
 * Every patch of the finance application, and why it stays. Runs started before Worker Versioning are unversioned
 * and are pinned to the first versioned build that runs them, so that build (and each after it) still replays
 * every history in test/histories: the code of runs from before each change is kept, behind its patch, either
 * beside the decision it guards or, for the timer loop and the unread duplicates, in legacy.ts. A patch id is
 * never renamed or reused (test/workflows/finance-application/patches.test.ts checks them against the histories).
 * Each function below asks patched() at the point the workflow asked it when the history was recorded: its marker
 * is a command, so do not move a call.
 */

/**
 * Runs that passed this point before the poll policy existed keep the old loop (a timer per poll, reads on the
 * main task queue: legacy.ts) until they end or continue as new; new runs poll through one activity on the
 * bank-reads task queue (polling.ts).
 */
export const POLL_POLICY_PATCH = 'poll-activity-on-bank-reads-queue';

/**
 * Once this application's webhooks have proven themselves, a change a webhook announced no longer cancels and
 * restarts the polling activity (that cost a workflow task and an activity task on the webhook's path, at every
 * change): the running poll finds the new status unknown to it at its next read. Runs recorded before keep
 * restarting at every change (pollKey in polling.ts).
 */
export const KEEP_POLL_PATCH = 'poll-kept-across-webhook-changes';

/**
 * Runs started before the callback allow-list went straight to creation; new runs with a callbackUrl first ask the
 * worker for its verdict (a local activity) and fail, before the bank is called, when refused (creation.ts).
 */
export const CALLBACK_ALLOW_LIST_PATCH = 'check-callback-url-before-create';

/**
 * New runs report another application the bank holds for this reference (its webhooks carry another
 * financeApplicationId) through a search attribute, a metric, the Web UI's details and the merchant's callback;
 * runs from before only count such webhooks as mismatched (legacy.ts).
 */
export const DUPLICATES_PATCH = 'report-duplicate-applications';

/**
 * New runs treat a 404 on the status read of their application (BankApplicationUnknown) as an anomaly:
 * FinanceApplicationStatus UNKNOWN_AT_BANK, a metric, one log line, slow polling, and an end after a day of
 * nothing but 404s (src/shared/finance-application.ts). Runs from before count the 404 as a failed read.
 */
export const UNKNOWN_AT_BANK_PATCH = 'report-application-unknown-at-bank';

/**
 * New runs believe another financeApplicationId only when a status read of it at the bank answers (a 404 means
 * invented), keep at most a few, read at most a few over the application's life, and only count the rest
 * (duplicates.ts, webhook-ids.ts). Runs from before report every other id they see (DUPLICATES_PATCH), unread.
 */
export const CONFIRM_DUPLICATES_PATCH = 'confirm-duplicate-applications-at-bank';

/** Every patch id above. */
export const FINANCE_APPLICATION_PATCHES = [
  POLL_POLICY_PATCH,
  KEEP_POLL_PATCH,
  CALLBACK_ALLOW_LIST_PATCH,
  DUPLICATES_PATCH,
  UNKNOWN_AT_BANK_PATCH,
  CONFIRM_DUPLICATES_PATCH,
] as const;

/** Before creation, when the run has a callback URL and no application yet. */
export const checksCallbackUrl = (): boolean => patched(CALLBACK_ALLOW_LIST_PATCH);

/** After creation: the polling activity (true) or the timer loop of legacy.ts. */
export const pollsThroughActivity = (): boolean => patched(POLL_POLICY_PATCH);

/** What the polling loop does differently for runs from before, asked once as it starts (after its deadline timer). */
export interface LoopPatches {
  keepPollAcrossWebhookChanges: boolean;
  reportDuplicates: boolean;
  confirmDuplicates: boolean;
}

export function loopPatches(): LoopPatches {
  const keepPollAcrossWebhookChanges = patched(KEEP_POLL_PATCH);
  const reportDuplicates = patched(DUPLICATES_PATCH);
  // Only asked under DUPLICATES_PATCH (its marker is recorded only there).
  const confirmDuplicates = reportDuplicates && patched(CONFIRM_DUPLICATES_PATCH);
  return { keepPollAcrossWebhookChanges, reportDuplicates, confirmDuplicates };
}

/** Asked only when a read of our own application got the bank's 404 (failures.ts isUnknownAtBank). */
export const reportsUnknownAtBank = (): boolean => patched(UNKNOWN_AT_BANK_PATCH);
