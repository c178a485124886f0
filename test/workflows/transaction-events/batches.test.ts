import {
  DEFAULT_TRANSACTION_BATCHES_PER_RUN,
  DEFAULT_TRANSACTION_COALESCE_WINDOW,
  DEFAULT_TRANSACTION_IDLE_TIMEOUT,
  MAX_ACCOUNTS_PER_BATCH,
} from '../../../src/shared/transaction-events';
import {
  TransactionBatches,
  batchIdempotencyKey,
  resolveTransactionEventsSettings,
  transactionsChangedEvent,
} from '../../../src/workflows/transaction-events/batches';
import { SNAPSHOT_SCHEMA_VERSIONS } from '../../../src/workflows/snapshots';

/** The transaction events' coalescing and batching (plain code). */
describe('TransactionBatches', () => {
  const consentId = 'consent-1';
  const accounts = (...ids: string[]) => ids.map((accountId) => ({ accountId }));

  it('fills in the defaults, with at least one batch per run', () => {
    expect(resolveTransactionEventsSettings({ merchantId: 'test', consentId })).toEqual({
      coalesceWindow: DEFAULT_TRANSACTION_COALESCE_WINDOW,
      idleTimeout: DEFAULT_TRANSACTION_IDLE_TIMEOUT,
      maxBatchesPerRun: DEFAULT_TRANSACTION_BATCHES_PER_RUN,
    });
    expect(
      resolveTransactionEventsSettings({ merchantId: 'test', consentId, maxBatchesPerRun: 0 }).maxBatchesPerRun,
    ).toBe(1);
  });

  it('coalesces a burst into one batch: the union of the accounts, sorted, and the last eventType', () => {
    const b = new TransactionBatches(consentId);
    b.receive({ consentId, accounts: accounts('b', 'a') });
    b.receive({ consentId, eventType: 'UPDATED', accounts: accounts('a', 'c') });
    expect(b.pendingCount).toBe(3);
    const batch = b.takeBatch();
    expect(batch).toEqual({ consentId, eventType: 'UPDATED', accountIds: ['a', 'b', 'c'], events: 2, batch: 1 });
    expect(b.pendingCount).toBe(0);
    expect(b.state()).toEqual({ consentId, pendingAccountIds: [], events: 2, batches: 1 });
    expect(transactionsChangedEvent(batch)).toEqual({
      type: 'transactionsChanged',
      consentId,
      eventType: 'UPDATED',
      accounts: accounts('a', 'b', 'c'),
      events: 2,
      batch: 1,
    });
    expect(batchIdempotencyKey('wf', 'run-1', batch.batch)).toBe('wf:run-1:1');
  });

  it('cuts a backlog into batches of at most MAX_ACCOUNTS_PER_BATCH', () => {
    const ids = Array.from({ length: MAX_ACCOUNTS_PER_BATCH + 5 }, (_, i) => `acc-${String(i).padStart(5, '0')}`);
    const bounded = new TransactionBatches(consentId);
    bounded.receive({ consentId, accounts: accounts(...ids) });
    expect(bounded.hasBacklog()).toBe(true);
    const first = bounded.takeBatch();
    expect(first.accountIds).toEqual(ids.slice(0, MAX_ACCOUNTS_PER_BATCH));
    expect(bounded.hasBacklog()).toBe(false);
    expect(bounded.takeBatch()).toMatchObject({
      accountIds: ids.slice(MAX_ACCOUNTS_PER_BATCH),
      events: 0,
      batch: 2,
    });
    expect(bounded.batchesThisRun).toBe(2);
  });

  it('carries undelivered accounts and the counters over continue-as-new, and starts from them', () => {
    const b = new TransactionBatches(consentId, { pendingAccountIds: ['x'], events: 7, batches: 3 });
    b.receive({ consentId, accounts: accounts('y') });
    const snapshot = b.snapshot();
    expect(snapshot).toEqual({
      schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.transactionEvents,
      pendingAccountIds: ['x', 'y'],
      events: 8,
      batches: 3,
    });
    const next = new TransactionBatches(consentId, snapshot);
    expect(next.batchesThisRun).toBe(0);
    expect(next.takeBatch()).toMatchObject({ accountIds: ['x', 'y'], batch: 4, events: 0 });
  });
});
