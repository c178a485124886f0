import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  log,
  makeContinueAsNewFunc,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/types';
import { ConsentId } from '../../shared/search-attributes';
import {
  transactionEventSignal,
  transactionEventsStateQuery,
  type TransactionEventsInput,
  type TransactionEventsState,
} from '../../shared/transaction-events';
import { upgradeCheckSignal } from '../../shared/versioning';
import { MERCHANT_CALLBACK_ACTIVITY_OPTIONS } from '../activity-options';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { readTransactionEventsSnapshot } from '../snapshots';
import {
  TransactionBatches,
  batchIdempotencyKey,
  resolveTransactionEventsSettings,
  transactionsChangedEvent,
  type TransactionBatch,
} from './batches';

const { notifyMerchant } = proxyActivities<Activities>(MERCHANT_CALLBACK_ACTIVITY_OPTIONS);

/**
 * Per-consent hand-off of transactionEvents (operating-bank accounts), started or signalled by the receiver with
 * signal-with-start. A burst is coalesced for `coalesceWindow` after its first event, then ONE merchant callback
 * carries the union of the changed accounts (at most MAX_ACCOUNTS_PER_BATCH: a bigger backlog goes out as
 * consecutive batches); events that arrive meanwhile make the next batch. The run continues as new when its history
 * grows, carrying undelivered accounts (at most one batch), and closes after `idleTimeout` without events.
 * The batching decisions are in batches.ts.
 */
export async function transactionEventsWorkflow(input: TransactionEventsInput): Promise<TransactionEventsState> {
  const { consentId, callbackUrl } = input;
  const { coalesceWindow, idleTimeout, maxBatchesPerRun } = resolveTransactionEventsSettings(input);
  // Read by this build's schema reader: any version it knows or a newer one (snapshots.ts).
  const carried = input.carried === undefined ? undefined : readTransactionEventsSnapshot(input.carried);
  const batches = new TransactionBatches(consentId, carried);

  // --- Handlers first: they only record; the body delivers.
  setHandler(transactionEventSignal, (event) => batches.receive(event));
  setHandler(transactionEventsStateQuery, () => batches.state());
  // The deploy procedure's nudge: its workflow task shows a sleeping run the new version (versioning.ts).
  setHandler(upgradeCheckSignal, () => undefined);

  if (!workflowInfo().typedSearchAttributes.get(ConsentId))
    upsertSearchAttributes([{ key: ConsentId, value: consentId }]);

  // Onto the deployment's target version: a new build's run starts from this snapshot (continue-as-new.ts).
  const continueAsNew = async (): Promise<never> =>
    makeContinueAsNewFunc<typeof transactionEventsWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
      ...input,
      carried: batches.snapshot(),
    });

  for (;;) {
    setCurrentDetails(`Idle — ${batches.events} transactionEvent(s), ${batches.batches} batch(es) delivered so far`);
    // --- 1. Wait for a burst, or close when idle.
    if (batches.pendingCount === 0) {
      const woke = await condition(() => batches.pendingCount > 0 || newVersion(), idleTimeout);
      // Checked again: an event recorded in the same activation as the idle timer still gets delivered.
      if (!woke && batches.pendingCount === 0) break;
      if (batches.pendingCount === 0) {
        // Woken by a new version with nothing to deliver: move to it now, carrying the counters.
        await condition(allHandlersFinished);
        if (batches.pendingCount === 0) {
          log.info('Continuing as new', {
            consentId,
            events: batches.events,
            batches: batches.batches,
            pending: 0,
            reason: 'new-version',
          });
          await continueAsNew();
        }
      }
    }
    // --- 2. Coalesce the burst; a backlog of more than one batch was coalesced already, and goes out back to back.
    if (!batches.hasBacklog()) await sleep(coalesceWindow, { summary: 'coalesce a burst of transactionEvents' });

    // --- 3. One callback for the batch.
    const batch = batches.takeBatch();
    setCurrentDetails(
      `Delivering batch ${batch.batch}: ${batch.accountIds.length} account(s) from ${batch.events} event(s)`,
    );
    await deliver(batch);

    // --- 4. Continue as new when the run has grown (or a new version waits), delivering down to one batch first.
    const reason = continueAsNewReason(workflowInfo());
    if (batches.batchesThisRun >= maxBatchesPerRun || reason !== undefined) {
      // Deliver down to one batch first: the snapshot carries at most MAX_ACCOUNTS_PER_BATCH accounts.
      if (batches.hasBacklog()) continue;
      await condition(allHandlersFinished);
      log.info('Continuing as new', {
        consentId,
        events: batches.events,
        batches: batches.batches,
        pending: batches.pendingCount,
        reason: reason ?? 'batches',
      });
      await continueAsNew();
    }
  }

  await condition(allHandlersFinished);
  log.info('Transaction events idle: closing', { consentId, events: batches.events, batches: batches.batches });
  return batches.state();

  async function deliver(batch: TransactionBatch): Promise<void> {
    if (!callbackUrl) {
      // Counts, never the customers' account ids (up to MAX_ACCOUNTS_PER_BATCH a batch): they go to the merchant only.
      log.info('transactionEvents coalesced (no merchant callback configured)', {
        consentId,
        eventType: batch.eventType,
        batch: batch.batch,
        events: batch.events,
        accounts: batch.accountIds.length,
      });
      return;
    }
    const { workflowId, firstExecutionRunId } = workflowInfo();
    try {
      await notifyMerchant.executeWithOptions(
        { summary: `POST ${batch.accountIds.length} changed account(s) to the merchant (batch ${batch.batch})` },
        [
          {
            merchantId: input.merchantId,
            url: callbackUrl,
            idempotencyKey: batchIdempotencyKey(workflowId, firstExecutionRunId, batch.batch),
            event: { ...transactionsChangedEvent(batch) },
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
        accounts: batch.accountIds.length,
        error: err.cause?.message ?? err.message,
      });
    }
  }
}

/** A new Current Version of the deployment: the run continues as new onto it at its next safe point. */
function newVersion(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged;
}
