import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { CALLBACK_REJECTED, NON_RETRYABLE_BANK_FAILURES } from '../shared/failure-types';

/**
 * Activity options for every workflow, in one place. The HTTP deadlines on the activity side
 * (bank call 20 s, token request 8 s, merchant callback 10 s) are below these startToCloseTimeouts, so an
 * attempt fails with the bank's or merchant's own failure type rather than a bare activity timeout.
 */

/** Bank calls (createApplication, getApplicationStatus, startRefresh): give up after 10 minutes of retries. */
export const BANK_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    // BankRejected, BankUnauthorized, BankInvalidResponse: the same request would get the same answer.
    nonRetryableErrorTypes: NON_RETRYABLE_BANK_FAILURES,
  },
};

/**
 * A status read of another financeApplicationId, to confirm it (src/workflows/finance-application/webhook-ids.ts): the same retries as
 * our own reads, for two minutes only. The loop waits for it, and an unconfirmed id is only counted, never lost work.
 */
export const CONFIRMATION_READ_OPTIONS: ActivityOptions = {
  ...BANK_ACTIVITY_OPTIONS,
  scheduleToCloseTimeout: '2 minutes',
};

/**
 * Merchant callbacks (notifyMerchant): a merchant may be down for days. The activity gives up at the end of its
 * merchant's retry window (default 3 days; src/shared/undelivered-callbacks.ts callbackRetry) and sets each retry's
 * delay by this backoff (CALLBACK_BACKOFF); the schedule-to-close is only the backstop, the longest window allowed.
 * An option of the command, not a command: recorded histories replay (docs/decisions/0049-undelivered-callbacks-ledger.md).
 */
export const MERCHANT_CALLBACK_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '15 seconds',
  scheduleToCloseTimeout: '7 days',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    nonRetryableErrorTypes: [CALLBACK_REJECTED],
  },
};

/**
 * A callback sent again from the console (callbackRedeliveryWorkflow): someone is looking at the page, so a few
 * quick attempts within minutes, not a day.
 */
export const CALLBACK_REDELIVERY_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '15 seconds',
  scheduleToCloseTimeout: '5 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [CALLBACK_REJECTED],
  },
};

/**
 * The polling activity (pollApplicationStatus): its retries are the polls. Each attempt sets its own
 * nextRetryDelay from the poll policy, so the retry policy's intervals only apply to an attempt that timed
 * out. No schedule-to-close and no attempt limit: it polls until a new status, a webhook (which cancels it)
 * or the workflow's deadline. No non-retryable types: a bank error is one more reason to try again later.
 * Attempts queue on the rate-limited bank-reads task queue, so a wait there is not a timeout.
 */
export const POLL_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '30 seconds',
    backoffCoefficient: 2,
    maximumInterval: '15 minutes',
    // maximumAttempts unset: unlimited.
  },
};

/**
 * The callback allow-list check (checkCallbackUrl, a local activity: a pure decision on the worker's
 * configuration). It returns a verdict rather than failing, so retries only cover a worker that fails to run it.
 */
export const CALLBACK_CHECK_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 5 },
};

/** readClock (a local activity): reading the worker's clock; retried only if the worker fails to run it. */
export const CLOCK_READ_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 5 },
};
