import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { callbackFailureDetails, type CallbackDelivery } from '../../shared/merchant-callbacks';
import { rootMessage } from './failures';

/** What was sent, before its outcome is known. */
export type CallbackSent = Pick<CallbackDelivery, 'idempotencyKey' | 'about' | 'url' | 'event'>;

/** The record of a callback the merchant took: notifyMerchant's result carries the status and attempt. */
export function deliveredRecord(
  sent: CallbackSent,
  result: { status?: number; attempt?: number } | undefined,
  at: string,
): CallbackDelivery {
  return {
    ...sent,
    outcome: 'delivered',
    ...(typeof result?.status === 'number' ? { httpStatus: result.status } : {}),
    ...(typeof result?.attempt === 'number' ? { attempts: result.attempt } : {}),
    at,
  };
}

/** The record of a callback given up on: the activity's last failure says the status and attempt, when it had one. */
export function failedRecord(sent: CallbackSent, err: unknown, at: string): CallbackDelivery {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const failure = cause instanceof ApplicationFailure ? cause : undefined;
  const { status, attempt } = callbackFailureDetails(failure?.details ?? undefined);
  return {
    ...sent,
    outcome: 'failed',
    ...(status !== undefined ? { httpStatus: status } : {}),
    ...(attempt !== undefined ? { attempts: attempt } : {}),
    ...(failure?.type ? { failureType: failure.type } : {}),
    message: rootMessage(err).slice(0, 300),
    at,
  };
}
