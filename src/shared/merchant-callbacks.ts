/**
 * What the workflows remember of their merchant callbacks, and the redelivery workflow's contract
 * (docs/decisions/0043-callback-deliveries-and-redelivery.md). Plain data and pure rules: used by the workflows,
 * the activity, the client and the console.
 */

/** How a callback delivery ended: the merchant took it (2xx), or the activity gave up (after its retries). */
export type CallbackDeliveryOutcome = 'delivered' | 'failed';

/** One callback, as the workflow last sent it (a resend is a redelivery workflow of its own). */
export interface CallbackDelivery {
  /** Sent as `webhook-id`: the merchant dedupes on it; a resend sends the same key. */
  idempotencyKey: string;
  /** What it was about: the status, or `duplicate:<financeApplicationId>`. */
  about: string;
  outcome: CallbackDeliveryOutcome;
  /** The merchant's HTTP status of the last attempt; absent when none came (refused, network, timeout). */
  httpStatus?: number;
  /** Attempts the activity made (its retries); absent when the failure did not say. */
  attempts?: number;
  /** The failure's type (MerchantCallbackUnavailable, …) and message, when it failed. */
  failureType?: string;
  message?: string;
  /** ISO time (workflow time) the outcome was recorded. */
  at: string;
  /** Where and what was sent: a resend posts the same event to the same URL. */
  url: string;
  event: Record<string, unknown>;
}

/** The deliveries a run keeps (the newest): the state stays small, and a continue-as-new snapshot with it. */
export const MAX_CALLBACK_DELIVERIES_KEPT = 20;

/** The list with `delivery` appended, the oldest dropped beyond MAX_CALLBACK_DELIVERIES_KEPT. */
export function withDelivery(
  list: readonly CallbackDelivery[] | undefined,
  delivery: CallbackDelivery,
): CallbackDelivery[] {
  return [...(list ?? []), delivery].slice(-MAX_CALLBACK_DELIVERIES_KEPT);
}

/** What the activity put in a failure's details (src/activities/index.ts notifyMerchant). */
export interface CallbackFailureDetails {
  status?: number;
  attempt?: number;
}

/** The first details entry of a failure, read defensively (older workers put `{ status }` only). */
export function callbackFailureDetails(details: readonly unknown[] | undefined): CallbackFailureDetails {
  const first = details?.[0];
  if (first === null || typeof first !== 'object') return {};
  const { status, attempt } = first as Record<string, unknown>;
  return {
    ...(typeof status === 'number' ? { status } : {}),
    ...(typeof attempt === 'number' ? { attempt } : {}),
  };
}

/** The redelivery workflow's type: a single callback sent again, with its own short retries. */
export const callbackRedeliveryWorkflowType = 'callbackRedeliveryWorkflow';

/**
 * The id of the redelivery of one callback: one at a time per idempotency key (a second click while one runs joins
 * it); a later resend reuses the id (the run before it closed). The key starts with the application's workflow id,
 * so the id names its merchant.
 */
export const callbackRedeliveryWorkflowId = (idempotencyKey: string): string => `callback-redelivery:${idempotencyKey}`;

export interface CallbackRedeliveryInput {
  merchantId: string;
  url: string;
  idempotencyKey: string;
  event: Record<string, unknown>;
}

/** The redelivery's result: the same record the application keeps for its own deliveries. */
export type CallbackRedeliveryResult = Omit<CallbackDelivery, 'url' | 'event'>;
