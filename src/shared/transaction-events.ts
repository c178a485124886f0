import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { TransactionEventBody } from './bank-wire';

/**
 * The transactionEvents contract: the bank's transactionEvent webhooks for one consent go, by signal-with-start, to
 * that consent's transactionEventsWorkflow, which coalesces a burst into one `transactionsChanged` callback to the
 * merchant. Its messages, input, state and the callback's event, used by the workflow, the receiver
 * (src/api/resources/webhooks/accounts.ts) and merchants reading the callback.
 */

export const transactionEventsWorkflowType = 'transactionEventsWorkflow';

export const DEFAULT_TRANSACTION_COALESCE_WINDOW: Duration = '2 seconds';
export const DEFAULT_TRANSACTION_IDLE_TIMEOUT: Duration = '10 minutes';
/**
 * At most this many accounts per transactionEvent signal (the receiver splits a bigger webhook into several) and per
 * merchant callback (a bigger backlog goes out as consecutive batches). With ids of at most 128 characters a signal,
 * a callback and the carried snapshot stay under ~150 KB, far below Temporal's 2 MB payload limit.
 */
export const MAX_ACCOUNTS_PER_BATCH = 1_000;

/** Downstream batches per run before continue-as-new, besides the server's continueAsNewSuggested. */
export const DEFAULT_TRANSACTION_BATCHES_PER_RUN = 200;

export interface TransactionEventsInput {
  /** The merchant that claimed the consent. */
  merchantId: string;
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
  /** Carried over continue-as-new; schemaVersion: src/workflows/snapshots.ts (absent: version 1). */
  carried?: { schemaVersion?: number; pendingAccountIds: string[]; events: number; batches: number };
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
