import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities/types';
import type { CallbackRedeliveryInput, CallbackRedeliveryResult } from '../../shared/merchant-callbacks';
import { CALLBACK_REDELIVERY_ACTIVITY_OPTIONS } from '../activity-options';
import { deliveredRecord, failedRecord } from '../finance-application/callback-deliveries';

/**
 * A merchant's staff asked (in the console) to send one callback again: the same event to the same URL with the same
 * idempotency key, so a merchant that had it after all drops it (docs/decisions/0043-callback-deliveries-and-redelivery.md).
 * Its own workflow, so it works for a completed application too and never touches the application's run. Returns the
 * outcome as the application records its own deliveries; never fails for the merchant's answer.
 */
export async function callbackRedeliveryWorkflow(input: CallbackRedeliveryInput): Promise<CallbackRedeliveryResult> {
  const { merchantId, url, idempotencyKey, event } = input;
  const sent = { idempotencyKey, about: 'redelivery', url, event };
  const { notifyMerchant } = proxyActivities<Activities>({
    ...CALLBACK_REDELIVERY_ACTIVITY_OPTIONS,
    summary: 'Send the merchant callback again',
  });
  let record;
  try {
    const result = await notifyMerchant({ merchantId, url, idempotencyKey, event });
    record = deliveredRecord(sent, result, new Date().toISOString());
  } catch (err) {
    if (isCancellation(err)) throw err;
    record = failedRecord(sent, err, new Date().toISOString());
  }
  const { url: _url, event: _event, ...result } = record;
  return result;
}
