import {
  allHandlersFinished,
  condition,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/types';
import {
  bulkResendProgressQuery,
  type BulkResendInput,
  type BulkResendProgress,
} from '../../shared/undelivered-callbacks';
import { BANK_ACTIVITY_OPTIONS, CALLBACK_REDELIVERY_ACTIVITY_OPTIONS } from '../activity-options';
import { rootMessage } from '../finance-application/failures';

/** Given-up callbacks read from the ledger per page (each sent before the next page is read). */
const PAGE_SIZE = 20;
const MAX_FAILURES_SHOWN = 50;

/**
 * A merchant asked to send its given-up callbacks of a time range again (docs/decisions/0049-undelivered-callbacks-ledger.md):
 * each with its recorded event, URL and idempotency key, one after the other, at most `perMinute` a minute (the
 * merchant's pace: one merchant's bulk never crowds out another's callbacks). A delivered one leaves the ledger (the
 * activity reports it), so a second bulk resend of the range finds none of them. Callbacks still retrying are left
 * to their own retries (sent here too, they would be sent twice). Progress: the query and the current details.
 */
export async function callbackBulkResendWorkflow(input: BulkResendInput): Promise<BulkResendProgress> {
  const { merchantId, since, until, type } = input;
  const progress: BulkResendProgress = {
    merchantId,
    since,
    until,
    ...(type ? { type } : {}),
    found: 0,
    delivered: 0,
    failed: 0,
    skippedRetrying: 0,
    done: false,
    failures: [],
  };
  setHandler(bulkResendProgressQuery, () => progress);
  const { readUndeliveredCallbacks } = proxyActivities<Activities>({
    ...BANK_ACTIVITY_OPTIONS,
    summary: 'Read the merchant’s given-up callbacks',
  });
  const { notifyMerchant } = proxyActivities<Activities>({
    ...CALLBACK_REDELIVERY_ACTIVITY_OPTIONS,
    summary: 'Send a given-up callback again',
  });
  const gapMs = Math.ceil(60_000 / Math.max(1, input.perMinute));
  const show = () =>
    setCurrentDetails(
      `**Bulk resend** ${since} – ${until}${type ? ` (${type})` : ''}: ${progress.delivered} delivered, ` +
        `${progress.failed} failed of ${progress.found} found${progress.done ? ' (done)' : ''}`,
    );

  const retrying = await readUndeliveredCallbacks({
    merchantId,
    request: { since, until, ...(type ? { type } : {}), state: 'retrying', limit: 1_000 },
  });
  progress.skippedRetrying = retrying.callbacks.length;
  // Failed ones stay in the ledger: the cursor moves past them, so none is sent twice by this run.
  let after: string | undefined;
  for (;;) {
    show();
    const page = await readUndeliveredCallbacks({
      merchantId,
      request: {
        since,
        until,
        ...(type ? { type } : {}),
        state: 'given-up',
        limit: PAGE_SIZE,
        ...(after ? { after } : {}),
      },
    });
    for (const callback of page.callbacks) {
      progress.found++;
      try {
        await notifyMerchant({
          merchantId,
          url: callback.url,
          idempotencyKey: callback.idempotencyKey,
          event: callback.event,
        });
        progress.delivered++;
      } catch (err) {
        if (isCancellation(err)) throw err;
        progress.failed++;
        if (progress.failures.length < MAX_FAILURES_SHOWN)
          progress.failures.push({ idempotencyKey: callback.idempotencyKey, message: rootMessage(err).slice(0, 300) });
      }
      show();
      await sleep(gapMs);
    }
    if (page.next === undefined) break;
    after = page.next;
  }
  progress.done = true;
  show();
  await condition(allHandlersFinished);
  return progress;
}
