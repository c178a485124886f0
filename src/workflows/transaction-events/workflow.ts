import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  log,
  makeContinueAsNewFunc,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { readTransactionEventsSnapshot, SNAPSHOT_SCHEMA_VERSIONS } from '../snapshots';
import type { Activities } from '../../activities/types';
import {
  DEFAULT_TRANSACTION_BATCHES_PER_RUN,
  DEFAULT_TRANSACTION_COALESCE_WINDOW,
  DEFAULT_TRANSACTION_IDLE_TIMEOUT,
  MAX_ACCOUNTS_PER_BATCH,
  transactionEventSignal,
  transactionEventsStateQuery,
  type TransactionEventsInput,
  type TransactionEventsState,
  type TransactionsChangedEvent,
} from '../../shared/transaction-events';
import { ConsentId } from '../../shared/search-attributes';
import { MERCHANT_CALLBACK_ACTIVITY_OPTIONS } from '../activity-options';

const { notifyMerchant } = proxyActivities<Activities>(MERCHANT_CALLBACK_ACTIVITY_OPTIONS);

/**
 * Versioning: with more than MAX_ACCOUNTS_PER_BATCH accounts pending, new runs deliver them in consecutive batches of
 * at most that many (the first after the coalescing window, the rest at once), and continue as new only once at
 * most one batch is left, so callbacks and the carried snapshot stay bounded. Runs from before sent every pending
 * account in one callback. Asked only when it matters (more than one batch pending), so other histories are unchanged.
 */
export const BOUNDED_BATCHES_PATCH = 'transaction-events-bounded-batches';

/**
 * Per-consent hand-off of transactionEvents (operating-bank accounts), started or signalled by the receiver with
 * signal-with-start. A burst is coalesced for `coalesceWindow` after its first event, then ONE merchant callback
 * carries the union of the changed accounts (at most MAX_ACCOUNTS_PER_BATCH: a bigger backlog goes out as
 * consecutive batches); events that arrive meanwhile make the next batch. The run continues as new when its history
 * grows, carrying undelivered accounts (at most one batch), and closes after `idleTimeout` without events.
 */
export async function transactionEventsWorkflow(input: TransactionEventsInput): Promise<TransactionEventsState> {
  const { consentId, callbackUrl } = input;
  const coalesceWindow = input.coalesceWindow ?? DEFAULT_TRANSACTION_COALESCE_WINDOW;
  const idleTimeout = input.idleTimeout ?? DEFAULT_TRANSACTION_IDLE_TIMEOUT;
  const maxBatchesPerRun = Math.max(1, input.maxBatchesPerRun ?? DEFAULT_TRANSACTION_BATCHES_PER_RUN);
  const { workflowId, firstExecutionRunId } = workflowInfo();

  // --- State: the handler only records; the body delivers.
  // Read by this build's schema reader: any version it knows or a newer one (snapshots.ts).
  const carried = input.carried === undefined ? undefined : readTransactionEventsSnapshot(input.carried);
  const pending = new Set<string>(carried?.pendingAccountIds ?? []);
  let pendingEvents = 0;
  let eventType = 'NEW';
  let events = carried?.events ?? 0;
  let batches = carried?.batches ?? 0;
  let batchesThisRun = 0;
  const state = (): TransactionEventsState => ({ consentId, pendingAccountIds: [...pending], events, batches });

  setHandler(transactionEventSignal, (event) => {
    events++;
    pendingEvents++;
    if (event.eventType) eventType = event.eventType;
    for (const account of event.accounts) pending.add(account.accountId);
  });
  setHandler(transactionEventsStateQuery, state);
  // The deploy procedure's nudge: its workflow task shows a sleeping run the new version (versioning.ts).
  setHandler(upgradeCheckSignal, () => undefined);

  if (!workflowInfo().typedSearchAttributes.get(ConsentId))
    upsertSearchAttributes([{ key: ConsentId, value: consentId }]);

  const deliver = async (batch: {
    consentId: string;
    eventType: string;
    accountIds: string[];
    events: number;
    batch: number;
  }): Promise<void> => {
    if (!callbackUrl) {
      log.info('transactionEvents coalesced (no merchant callback configured)', { ...batch });
      return;
    }
    const event: TransactionsChangedEvent = {
      type: 'transactionsChanged',
      consentId: batch.consentId,
      eventType: batch.eventType,
      accounts: batch.accountIds.map((accountId) => ({ accountId })),
      events: batch.events,
      batch: batch.batch,
    };
    try {
      await notifyMerchant.executeWithOptions(
        { summary: `POST ${batch.accountIds.length} changed account(s) to the merchant (batch ${batch.batch})` },
        // The chain's first run id makes the key unique per chain; the batch number per delivery within it.
        [
          {
            merchantId: input.merchantId,
            url: callbackUrl,
            idempotencyKey: `${workflowId}:${firstExecutionRunId}:${batch.batch}`,
            event: { ...event },
          },
        ],
      );
      log.info('transactionEvents delivered to the merchant', {
        consentId,
        batch: batch.batch,
        accounts: batch.accountIds.length,
      });
    } catch (err) {
      // The merchant refused it (4xx) or stayed down past the retry budget: log loudly, keep serving later bursts.
      if (!(err instanceof ActivityFailure)) throw err;
      log.error('transactionEvents batch not delivered', {
        consentId,
        batch: batch.batch,
        accountIds: batch.accountIds,
        error: err.cause?.message ?? err.message,
      });
    }
  };

  /** More than one batch pending (new runs only: BOUNDED_BATCHES_PATCH; patched() is asked only then). */
  const backlog = (): boolean => pending.size > MAX_ACCOUNTS_PER_BATCH && patched(BOUNDED_BATCHES_PATCH);

  for (;;) {
    setCurrentDetails(`Idle — ${events} transactionEvent(s), ${batches} batch(es) delivered so far`);
    if (pending.size === 0) {
      const woke = await condition(() => pending.size > 0 || newVersion(), idleTimeout);
      // Checked again: an event recorded in the same activation as the idle timer still gets delivered.
      if (!woke && pending.size === 0) break;
      if (pending.size === 0) {
        // Woken by a new version with nothing to deliver: move to it now, carrying the counters.
        await condition(allHandlersFinished);
        if (pending.size === 0) {
          log.info('Continuing as new', { consentId, events, batches, pending: 0, reason: 'new-version' });
          await makeContinueAsNewFunc<typeof transactionEventsWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
            ...input,
            carried: {
              schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.transactionEvents,
              pendingAccountIds: [],
              events,
              batches,
            },
          });
        }
      }
    }
    // A backlog of more than one batch was coalesced already: its batches go out one after the other.
    if (!backlog()) await sleep(coalesceWindow, { summary: 'coalesce a burst of transactionEvents' });

    let accountIds = [...pending].sort();
    if (backlog()) accountIds = accountIds.slice(0, MAX_ACCOUNTS_PER_BATCH);
    const coalesced = pendingEvents;
    for (const accountId of accountIds) pending.delete(accountId);
    pendingEvents = 0;
    batches++;
    batchesThisRun++;
    setCurrentDetails(`Delivering batch ${batches}: ${accountIds.length} account(s) from ${coalesced} event(s)`);
    await deliver({ consentId, eventType, accountIds, events: coalesced, batch: batches });

    const reason = continueAsNewReason(workflowInfo());
    if (batchesThisRun >= maxBatchesPerRun || reason !== undefined) {
      // Deliver down to one batch first: the snapshot carries at most MAX_ACCOUNTS_PER_BATCH accounts.
      if (backlog()) continue;
      await condition(allHandlersFinished);
      log.info('Continuing as new', { consentId, events, batches, pending: pending.size, reason: reason ?? 'batches' });
      // Onto the deployment's target version: a new build's run starts from this snapshot (continue-as-new.ts).
      await makeContinueAsNewFunc<typeof transactionEventsWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
        ...input,
        carried: {
          schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.transactionEvents,
          pendingAccountIds: [...pending],
          events,
          batches,
        },
      });
    }
  }

  await condition(allHandlersFinished);
  log.info('Transaction events idle: closing', { consentId, events, batches });
  return state();
}

/** A new Current Version of the deployment: the run continues as new onto it at its next safe point. */
function newVersion(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged;
}
