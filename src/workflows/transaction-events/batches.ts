import type { Duration } from '@temporalio/common';
import {
  DEFAULT_TRANSACTION_BATCHES_PER_RUN,
  DEFAULT_TRANSACTION_COALESCE_WINDOW,
  DEFAULT_TRANSACTION_IDLE_TIMEOUT,
  MAX_ACCOUNTS_PER_BATCH,
  type TransactionEventSignalInput,
  type TransactionEventsInput,
  type TransactionEventsState,
  type TransactionsChangedEvent,
} from '../../shared/transaction-events';
import { SNAPSHOT_SCHEMA_VERSIONS } from '../snapshots';

/**
 * The state and decisions of a consent's transactionEvents, as plain code: the workflow registers the handler and
 * runs the coalescing loop; this class records events (the union of changed accounts), cuts batches of at most
 * MAX_ACCOUNTS_PER_BATCH, and builds the callback's event and the snapshot continue-as-new carries. No Temporal API
 * here, so it is unit-tested directly (test/workflows/transaction-events/batches.test.ts).
 */

export interface TransactionEventsSettings {
  coalesceWindow: Duration;
  idleTimeout: Duration;
  maxBatchesPerRun: number;
}

export function resolveTransactionEventsSettings(input: TransactionEventsInput): TransactionEventsSettings {
  return {
    coalesceWindow: input.coalesceWindow ?? DEFAULT_TRANSACTION_COALESCE_WINDOW,
    idleTimeout: input.idleTimeout ?? DEFAULT_TRANSACTION_IDLE_TIMEOUT,
    maxBatchesPerRun: Math.max(1, input.maxBatchesPerRun ?? DEFAULT_TRANSACTION_BATCHES_PER_RUN),
  };
}

/** One coalesced batch: the changed accounts (sorted) and the events they came from. */
export interface TransactionBatch {
  consentId: string;
  eventType: string;
  accountIds: string[];
  events: number;
  /** 1-based within the workflow chain. */
  batch: number;
}

type Carried = NonNullable<TransactionEventsInput['carried']>;

export class TransactionBatches {
  /** Accounts received and not yet delivered. */
  private readonly pending: Set<string>;
  /** Events since the last batch was cut. */
  private pendingEvents = 0;
  /** The last event's eventType (NEW unless one says otherwise). */
  private eventType = 'NEW';
  /** Events received, all runs of the chain. */
  events: number;
  /** Batches cut, all runs of the chain. */
  batches: number;
  batchesThisRun = 0;

  constructor(
    readonly consentId: string,
    carried?: Carried,
  ) {
    this.pending = new Set<string>(carried?.pendingAccountIds ?? []);
    this.events = carried?.events ?? 0;
    this.batches = carried?.batches ?? 0;
  }

  /** The signal handler: records the event's accounts into the pending union. */
  receive(event: TransactionEventSignalInput): void {
    this.events++;
    this.pendingEvents++;
    if (event.eventType) this.eventType = event.eventType;
    for (const account of event.accounts) this.pending.add(account.accountId);
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** More than one batch pending. */
  hasBacklog(): boolean {
    return this.pending.size > MAX_ACCOUNTS_PER_BATCH;
  }

  /**
   * Cuts the next batch: the first MAX_ACCOUNTS_PER_BATCH pending accounts in sorted order (every one, most of the
   * time). The events counted so far all go with it.
   */
  takeBatch(): TransactionBatch {
    const accountIds = [...this.pending].sort().slice(0, MAX_ACCOUNTS_PER_BATCH);
    const events = this.pendingEvents;
    for (const accountId of accountIds) this.pending.delete(accountId);
    this.pendingEvents = 0;
    this.batches++;
    this.batchesThisRun++;
    return { consentId: this.consentId, eventType: this.eventType, accountIds, events, batch: this.batches };
  }

  state(): TransactionEventsState {
    return {
      consentId: this.consentId,
      pendingAccountIds: [...this.pending],
      events: this.events,
      batches: this.batches,
    };
  }

  /** What continue-as-new carries (at most one batch of accounts: the workflow delivers down to one first). */
  snapshot(): Carried {
    return {
      schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.transactionEvents,
      pendingAccountIds: [...this.pending],
      events: this.events,
      batches: this.batches,
    };
  }
}

/** The merchant callback's event for one batch. */
export function transactionsChangedEvent(batch: TransactionBatch): TransactionsChangedEvent {
  return {
    type: 'transactionsChanged',
    consentId: batch.consentId,
    eventType: batch.eventType,
    accounts: batch.accountIds.map((accountId) => ({ accountId })),
    events: batch.events,
    batch: batch.batch,
  };
}

/** One key per delivery: the chain's first run id makes it unique per chain, the batch number within it. */
export function batchIdempotencyKey(workflowId: string, firstExecutionRunId: string, batch: number): string {
  return `${workflowId}:${firstExecutionRunId}:${batch}`;
}
