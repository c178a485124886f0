import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { AccountEventBody, TransactionEventBody } from './bank-wire';

/**
 * Messages, inputs and results of the consent-refresh and transaction-events workflows. Defined once here and
 * used by the workflows, the merchant client (src/client) and the webhook receiver (src/api/routes).
 */

// ---------------------------------------------------------------------------------------------------------------
// consentRefreshWorkflow
// ---------------------------------------------------------------------------------------------------------------

export const consentRefreshWorkflowType = 'consentRefreshWorkflow';

/** Defaults of ConsentRefreshInput: long enough for a real bank, overridden with short values in tests. */
export const DEFAULT_REFRESH_TIMEOUT: Duration = '10 minutes';
export const DEFAULT_REFRESH_QUIET_PERIOD: Duration = '30 seconds';

export interface ConsentRefreshInput {
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
  /** Expected banks that have not reported (empty when no bank codes were expected). */
  missing: string[];
  expectedBankCodes?: string[];
  /** Events carrying another taskId (an earlier refresh's, or an unknown one). */
  staleEvents: number;
  /** Further events for a (taskId, bankCode) already recorded. */
  duplicateEvents: number;
  endedBy?: RefreshEndReason;
  /** Set (with done) when PUT /refresh failed for good: no task was started. */
  error?: string;
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
export const REFRESH_NOT_STARTED = 'RefreshNotStarted';

// ---------------------------------------------------------------------------------------------------------------
// transactionEventsWorkflow
// ---------------------------------------------------------------------------------------------------------------

export const transactionEventsWorkflowType = 'transactionEventsWorkflow';

export const DEFAULT_TRANSACTION_COALESCE_WINDOW: Duration = '2 seconds';
export const DEFAULT_TRANSACTION_IDLE_TIMEOUT: Duration = '10 minutes';
/** Downstream batches per run before continue-as-new, besides the server's continueAsNewSuggested. */
export const DEFAULT_TRANSACTION_BATCHES_PER_RUN = 200;

export interface TransactionEventsInput {
  consentId: string;
  /** Merchant endpoint receiving each batch of changed accounts; absent: batches are only recorded and logged. */
  callbackUrl?: string;
  /** After the first event of a burst, wait this long for more before the one downstream call. */
  coalesceWindow?: Duration;
  /** Close after this long without any event (a later event starts a new run with signal-with-start). */
  idleTimeout?: Duration;
  /** Continue-as-new after this many batches in one run (tests set it low). */
  maxBatchesPerRun?: number;
  /** Carried over continue-as-new: accounts received and not yet delivered, and batches sent so far. */
  carried?: { pendingAccountIds: string[]; events: number; batches: number };
}

/** The transactionEvent webhook body, passed on as received (validated by the receiver). */
export type TransactionEventSignalInput = TransactionEventBody;

export const transactionEventSignal = defineSignal<[TransactionEventSignalInput]>('transactionEvent');

/** The JSON event POSTed to the merchant's callback for one coalesced batch. */
export interface TransactionsChangedEvent {
  type: 'transactionsChanged';
  consentId: string;
  eventType: string;
  /** Union of the accounts of every transactionEvent in the batch, each once. */
  accounts: { accountId: string }[];
  /** transactionEvents coalesced into this batch. */
  events: number;
  /** 1-based batch number within the workflow chain (part of the Idempotency-Key). */
  batch: number;
}

export interface TransactionEventsState {
  consentId: string;
  /** Accounts received and not yet handed to the merchant. */
  pendingAccountIds: string[];
  /** transactionEvents received (all runs of the chain). */
  events: number;
  /** Downstream batches completed (all runs of the chain). */
  batches: number;
}

export const transactionEventsStateQuery = defineQuery<TransactionEventsState>('transactionEventsState');
