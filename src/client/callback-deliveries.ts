/**
 * A finance application's merchant callbacks as the console shows them: each recorded delivery (the workflow's state),
 * the one in flight (the run's pending notifyMerchant activity: its attempt and last failure), and each failed one's
 * latest resend (its callbackRedeliveryWorkflow). Sending one again starts that workflow. Every call is scoped:
 * the application is read through the merchant's own workflow id (docs/decisions/0043-callback-deliveries-and-redelivery.md).
 */
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  callbackFailureDetails,
  callbackRedeliveryWorkflowId,
  callbackRedeliveryWorkflowType,
  type CallbackDelivery,
  type CallbackRedeliveryInput,
  type CallbackRedeliveryResult,
} from '../shared/merchant-callbacks';
import type { FinanceApplicationState } from '../shared/finance-application';
import type { ApplicationPhase } from '../shared/application-phase';
import { temporal } from '@temporalio/proto';
import { MerchantId } from '../shared/search-attributes';
import { readFinanceApplication } from './finance-application-reads';
import { merchantScope, type MerchantScope } from './merchant-scope';
import { decodeFailureToError } from './raw-decoding';

/** The callback the run is sending now (retrying), from describe()'s pending activities. */
export interface CallbackInFlight {
  /** The attempt running now, or (not `sending`) the next one, scheduled for `nextAttemptAt`. */
  attempt: number;
  /** An attempt is running now (the activity is started); false between attempts, while the next one waits. */
  sending: boolean;
  /** The last attempt's failure: its message and the merchant's HTTP status when it answered. */
  lastFailure?: { message: string; httpStatus?: number };
  nextAttemptAt?: string;
}

/** The latest resend of a failed callback. */
export type CallbackResend =
  | { state: 'running'; attempt?: number; lastFailure?: { message: string; httpStatus?: number } }
  | ({ state: 'completed' } & CallbackRedeliveryResult)
  | { state: 'failed'; message: string };

export interface CallbackDeliveryView extends Omit<CallbackDelivery, 'url' | 'event'> {
  resend?: CallbackResend;
}

export interface FinanceApplicationTimeline {
  workflowId: string;
  state: FinanceApplicationState;
  /** Where it stands, in the API's words (src/shared/application-phase.ts). */
  phase: ApplicationPhase;
  deliveries: CallbackDeliveryView[];
  inFlight?: CallbackInFlight;
}

/** Thrown for a key the application has no failed delivery for (nothing to send again). */
export class NoSuchFailedDeliveryError extends Error {
  constructor(readonly idempotencyKey: string) {
    super('No failed callback with this key on this application');
    this.name = 'NoSuchFailedDeliveryError';
  }
}

/**
 * The merchant's application with its callbacks: one describe and one query (or result), one describe per failed
 * delivery (its resend; at most MAX_CALLBACK_DELIVERIES_KEPT). Throws WorkflowNotFoundError for a reference the
 * merchant does not have.
 */
export async function readFinanceApplicationTimeline(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<FinanceApplicationTimeline> {
  const { workflowId, state, phase, description } = await readFinanceApplication(client, merchant, merchantReference);
  const deliveries = await Promise.all(
    (state.callbackDeliveries ?? []).map(async ({ url: _url, event: _event, ...delivery }) =>
      delivery.outcome === 'failed'
        ? { ...delivery, ...withResend(await latestResend(client, delivery.idempotencyKey)) }
        : delivery,
    ),
  );
  const inFlight = await callbackInFlight(client, description);
  return { workflowId, state, phase, deliveries, ...(inFlight ? { inFlight } : {}) };
}

const withResend = (resend: CallbackResend | undefined) => (resend ? { resend } : {});

/**
 * Sends a failed callback of the merchant's application again: the recorded event, to the recorded URL, with the
 * same idempotency key, through a callbackRedeliveryWorkflow (a resend already running is joined, not doubled).
 * Throws WorkflowNotFoundError for another merchant's (or no) application, NoSuchFailedDeliveryError for a key
 * without a failed delivery.
 */
export async function redeliverCallback(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
  idempotencyKey: string,
  options: { taskQueue: string },
): Promise<{ workflowId: string }> {
  const scope = merchantScope(merchant);
  const { state } = await readFinanceApplication(client, scope, merchantReference);
  const delivery = [...(state.callbackDeliveries ?? [])]
    .reverse()
    .find((d) => d.idempotencyKey === idempotencyKey && d.outcome === 'failed');
  if (!delivery) throw new NoSuchFailedDeliveryError(idempotencyKey);
  const input: CallbackRedeliveryInput = {
    merchantId: scope.merchantId,
    url: delivery.url,
    idempotencyKey,
    event: delivery.event,
  };
  const workflowId = callbackRedeliveryWorkflowId(idempotencyKey);
  await client.workflow.start(callbackRedeliveryWorkflowType, {
    workflowId,
    taskQueue: options.taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [{ key: MerchantId, value: scope.merchantId }],
    staticSummary: `Resend of callback ${idempotencyKey}`,
  });
  return { workflowId };
}

/** The latest resend of this key, or undefined when there was none. */
async function latestResend(client: Client, idempotencyKey: string): Promise<CallbackResend | undefined> {
  const handle = client.workflow.getHandle(callbackRedeliveryWorkflowId(idempotencyKey));
  let description: WorkflowExecutionDescription;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  if (description.status.name === 'RUNNING') {
    const pending = await callbackInFlight(client, description);
    return { state: 'running', ...(pending ?? {}) };
  }
  if (description.status.name === 'COMPLETED') {
    return { state: 'completed', ...((await handle.result()) as CallbackRedeliveryResult) };
  }
  return { state: 'failed', message: `the resend ended ${description.status.name.toLowerCase()}` };
}

/** The pending notifyMerchant activity of a run, with its last failure decoded (failures are encrypted). */
async function callbackInFlight(
  client: Client,
  description: WorkflowExecutionDescription,
): Promise<CallbackInFlight | undefined> {
  const pending = description.raw.pendingActivities?.find((a) => a.activityType?.name === 'notifyMerchant');
  if (!pending) return undefined;
  const error = await decodeFailureToError(client.options.loadedDataConverter, pending.lastFailure);
  const failure = error instanceof ApplicationFailure ? error : undefined;
  const { status } = callbackFailureDetails(failure?.details ?? undefined);
  const next = pending.nextAttemptScheduleTime?.seconds;
  return {
    attempt: pending.attempt ?? 1,
    // SCHEDULED with a next attempt time: waiting out the retry's backoff, not sending.
    sending: pending.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
    ...(error
      ? {
          lastFailure: {
            message: error.message.slice(0, 300),
            ...(status !== undefined ? { httpStatus: status } : {}),
          },
        }
      : {}),
    ...(next != null ? { nextAttemptAt: new Date(Number(next) * 1000).toISOString() } : {}),
  };
}
