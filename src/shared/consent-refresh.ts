import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { AccountEventBody } from './bank-wire';

/**
 * Messages, inputs and results of the consent-refresh and late-account-events workflows (the transactionEvents
 * contract is in ./transaction-events.ts). Defined once here and used by the workflows, the merchant client
 * (src/client) and the webhook receiver (src/api/resources/webhooks).
 */

// ---------------------------------------------------------------------------------------------------------------
// consentRefreshWorkflow
// ---------------------------------------------------------------------------------------------------------------

export const consentRefreshWorkflowType = 'consentRefreshWorkflow';

/** Defaults of ConsentRefreshInput: long enough for a real bank, overridden with short values in tests. */
export const DEFAULT_REFRESH_TIMEOUT: Duration = '10 minutes';
export const DEFAULT_REFRESH_QUIET_PERIOD: Duration = '30 seconds';

export interface ConsentRefreshInput {
  /** The merchant that claimed the consent. */
  merchantId: string;
  consentId: string;
  /**
   * Banks the merchant expects to report. When given, the refresh ends as soon as all of them reported, and the
   * ones that did not are listed as `missing`. When absent, the refresh ends after the quiet period.
   */
  expectedBankCodes?: string[];
  /**
   * Ends the refresh when no new bank reported for this long after the last one. Used when expectedBankCodes is
   * absent (default DEFAULT_REFRESH_QUIET_PERIOD), or when given explicitly together with expectedBankCodes.
   */
  quietPeriod?: Duration;
  /** Upper bound of the whole refresh, from the workflow's start (default DEFAULT_REFRESH_TIMEOUT). */
  timeout?: Duration;
  /**
   * Banks learned from the consent's earlier refreshes (startConsentRefresh looks them up: learnedBankCodes in
   * src/shared/late-reports.ts). Without expectedBankCodes, the quiet period does not end the refresh while one of
   * them is missing (the timeout still does). Ignored when expectedBankCodes is given; carried in the result.
   */
  knownBankCodes?: string[];
  /**
   * Where late bank reports go when this refresh hands an event off itself (one of another task, or one that came
   * after it closed): the lateAccountEventsWorkflow it starts then posts them here. The receiver starts that
   * workflow with the same URL (TRANSACTIONS_CALLBACK_URL). Absent: such reports are kept and queryable only.
   */
  lateReportsCallbackUrl?: string;
}

/** One account of a bank's accountEvent, with the item eventType the bank sent (ADDED, UPDATED, REMOVED…). */
export interface RefreshedAccount {
  accountId: string;
  eventType: string;
}

/** What one bank reported for the refresh task: its first accountEvent carrying our taskId. */
export interface BankRefreshResult {
  bankCode: string;
  bankName: string;
  taskStatus: string;
  /** taskStatus === FINISHED; any other status is this bank's failure, not the workflow's. */
  succeeded: boolean;
  accounts: RefreshedAccount[];
  /** When the workflow recorded the event (ISO 8601, workflow time). */
  at: string;
  /** Reported after the refresh had closed: a late bank report (mergeLateReports), `at` is when it was recorded. */
  late?: true;
}

export type RefreshEndReason = 'all-reported' | 'quiet-period' | 'timeout';

/** Progress, as read by consentRefreshProgressQuery at any time (and after the workflow closed). */
export interface ConsentRefreshProgress {
  consentId: string;
  /** Undefined until PUT /refresh answered. */
  taskId?: string;
  done: boolean;
  /** Banks that reported, in the order their events were recorded; each bank once. */
  banks: BankRefreshResult[];
  /** Expected banks (else learned ones: knownBankCodes) that have not reported; empty when neither was given. */
  missing: string[];
  expectedBankCodes?: string[];
  /** Events carrying another taskId (an earlier refresh's, or an unknown one); handed off as late reports since v2. */
  staleEvents: number;
  /** Further events for a (taskId, bankCode) already recorded. */
  duplicateEvents: number;
  endedBy?: RefreshEndReason;
  /** Set (with done) when PUT /refresh failed for good: no task was started. */
  error?: string;
  /**
   * The learned banks this refresh was given (input knownBankCodes), carried forward so the next refresh can
   * learn from this one even when it saw no bank. Absent on runs from before the learned sets.
   */
  knownBankCodes?: string[];
  /** Events this refresh handed to the consent's lateAccountEventsWorkflow (another task's, or after it closed). */
  handedOffEvents?: number;
  /**
   * Late bank reports of this taskId merged in by the client (getConsentRefreshProgress): those banks are in
   * `banks` with `late: true` and no longer in `missing`. Set by the client, never by the workflow.
   */
  lateReports?: number;
}

export interface ConsentRefreshResult extends ConsentRefreshProgress {
  taskId: string;
  done: true;
  endedBy: RefreshEndReason;
}

/** The accountEvent webhook body, passed on as received (validated by the receiver). */
export type AccountEventSignalInput = AccountEventBody;

export const accountEventSignal = defineSignal<[AccountEventSignalInput]>('accountEvent');

export const consentRefreshProgressQuery = defineQuery<ConsentRefreshProgress>('consentRefreshProgress');

/**
 * Start-or-attach: sent with update-with-start (USE_EXISTING). Completes with the bank's taskId once PUT /refresh
 * answered, so every caller of a running refresh gets the same taskId.
 */
export interface AttachRefreshUpdateResult {
  consentId: string;
  taskId: string;
}
export const attachRefreshUpdate = defineUpdate<AttachRefreshUpdateResult, [Record<string, never>]>('attachRefresh');

/** Failure type of a consent refresh whose PUT /refresh failed for good (no task was started). */
export { REFRESH_NOT_STARTED } from './failure-types';

// ---------------------------------------------------------------------------------------------------------------
// lateAccountEventsWorkflow: accountEvents that came when their refresh could no longer take them
// ---------------------------------------------------------------------------------------------------------------

export const lateAccountEventsWorkflowType = 'lateAccountEventsWorkflow';

/** Close after this long without a late report (a later one starts a new run with signal-with-start). */
export const DEFAULT_LATE_REPORTS_IDLE_TIMEOUT: Duration = '24 hours';
/** Merchant deliveries per run before continue-as-new, besides the server's continueAsNewSuggested. */
export const DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN = 100;
/** Reports kept (queryable, carried over continue-as-new): the newest ones, undelivered ones always. */
export const MAX_LATE_REPORTS_KEPT = 50;
/** …and at most this many accounts over all kept reports, so the state stays far below Temporal's payload limit. */
export const MAX_LATE_REPORT_ACCOUNTS_KEPT = 5_000;
/** (taskId, bankCode) keys remembered for deduplication. */
export const MAX_LATE_REPORT_KEYS_KEPT = 1_000;

/**
 * Why an accountEvent is a late report:
 * - `refresh-closed`: the consent's latest refresh had already closed (its own task's or an older one's event);
 * - `no-refresh`: no refresh of this consent is known to Temporal (never started, or no longer retained);
 * - `other-task`: a refresh is running, for another taskId (an earlier refresh's event arriving late).
 */
export type LateReportReason = 'refresh-closed' | 'no-refresh' | 'other-task';

export interface LateAccountEventSignalInput {
  /** The accountEvent webhook body, as received (validated by the receiver). */
  event: AccountEventBody;
  reason: LateReportReason;
}

export const lateAccountEventSignal = defineSignal<[LateAccountEventSignalInput]>('lateAccountEvent');

/** One bank's late report, as kept by lateAccountEventsWorkflow and delivered to the merchant. */
export interface LateBankReport {
  consentId: string;
  taskId: string;
  bankCode: string;
  bankName: string;
  taskStatus: string;
  succeeded: boolean;
  accounts: RefreshedAccount[];
  /** When the late workflow recorded it (ISO 8601, workflow time). */
  at: string;
  reason: LateReportReason;
  /** pending: to be posted; delivered / failed: the merchant callback's end; kept: no callback URL configured. */
  delivery: 'pending' | 'delivered' | 'failed' | 'kept';
}

export interface LateAccountEventsInput {
  /** The merchant that claimed the consent. */
  merchantId: string;
  consentId: string;
  /** Merchant endpoint receiving each late report (TRANSACTIONS_CALLBACK_URL); absent: reports are only kept. */
  callbackUrl?: string;
  /** Close after this long without a report (default DEFAULT_LATE_REPORTS_IDLE_TIMEOUT). */
  idleTimeout?: Duration;
  /** Continue-as-new after this many deliveries in one run (tests set it low). */
  maxDeliveriesPerRun?: number;
  /** Reports handed over at the start (a refresh workflow starts this one as a child with them). */
  handedOff?: LateAccountEventSignalInput[];
  /** Carried over continue-as-new. */
  carried?: {
    /** src/workflows/snapshots.ts; absent: version 1, from before Worker Versioning. */
    schemaVersion?: number;
    reports: LateBankReport[];
    seenKeys: string[];
    received: number;
    duplicates: number;
  };
}

/** The JSON event POSTed to the merchant's callback for one late bank report: the report, without our delivery state. */
export type LateBankReportEvent = { type: 'consent.late-bank-report' } & Omit<LateBankReport, 'delivery'>;

export interface LateAccountEventsState {
  consentId: string;
  /** Kept reports, oldest first (bounded: MAX_LATE_REPORTS_KEPT, MAX_LATE_REPORT_ACCOUNTS_KEPT). */
  reports: LateBankReport[];
  /** Late accountEvents received (all runs of the chain), duplicates included. */
  received: number;
  /** Further events for a (taskId, bankCode) already reported. */
  duplicates: number;
}

export const lateAccountEventsQuery = defineQuery<LateAccountEventsState>('lateAccountEvents');
