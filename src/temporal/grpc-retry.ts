import { Metadata, status as grpcStatus } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type GrpcRetryOptions } from '@temporalio/client';
import { google, temporal } from '@temporalio/proto';

type Interceptor = ReturnType<typeof makeGrpcRetryInterceptor>;
type StatusObject = Parameters<GrpcRetryOptions['retryableDecider']>[1];

/** The least time before the deadline a retry is started with (a signal takes milliseconds, a busy one more). */
export const MIN_ATTEMPT_MS = 500;

const RESOURCE_EXHAUSTED = 8;
const RESOURCE_EXHAUSTED_FAILURE = 'temporal.api.errordetails.v1.ResourceExhaustedFailure';
const { RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW } = temporal.api.enums.v1.ResourceExhaustedCause;

/**
 * RESOURCE_EXHAUSTED with cause BusyWorkflow (from the status details, not the message): this one workflow could
 * not take the call now — its lock is contended, or its run is closing ("workflow is closing": a continue-as-new
 * under way, after which the next run takes the call).
 */
export function isBusyWorkflow(status: StatusObject): boolean {
  if (Number(status.code) !== RESOURCE_EXHAUSTED) return false;
  const bin = status.metadata?.get('grpc-status-details-bin')[0];
  if (!bin || typeof bin === 'string') return false;
  try {
    for (const detail of google.rpc.Status.decode(bin).details ?? []) {
      if (detail.type_url?.endsWith(`/${RESOURCE_EXHAUSTED_FAILURE}`) && detail.value) {
        const { cause } = temporal.api.errordetails.v1.ResourceExhaustedFailure.decode(detail.value);
        return cause === RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW;
      }
    }
  } catch {
    // Undecodable details: treated as any other RESOURCE_EXHAUSTED.
  }
  return false;
}

/**
 * The SDK's retry options, but a busy workflow is retried from 100 ms (as UNAVAILABLE is), not from the 1 s meant
 * for rate limits: it clears as soon as the lock is free or the closing run has continued as new.
 */
export function temporalRetryOptions(): GrpcRetryOptions {
  return defaultGrpcRetryOptions({
    initialIntervalMs: (status) =>
      Number(status.code) === RESOURCE_EXHAUSTED && !isBusyWorkflow(status) ? 1_000 : 100,
  });
}

/**
 * A gRPC retry interceptor (the SDK's, with temporalRetryOptions) bounded by the call's deadline.
 *
 * The SDK's own interceptor hands every attempt the call's one absolute deadline (`withDeadline`) and schedules
 * its backoff without looking at it. Temporal answers a signal RESOURCE_EXHAUSTED BusyWorkflow while the
 * workflow's run is closing (continue-as-new) or its lock is contended; the SDK backs that off 1.36–2.04 s, then
 * 2.31–3.47 s more, so a second refusal puts the third attempt after a 4 s deadline: grpc-js fails it at once
 * with `DEADLINE_EXCEEDED: Deadline exceeded after 0.000s, waiting for metadata filters` (and still sends it,
 * with `grpc-timeout: 0m`), later than the deadline promised, and the status that mattered is lost.
 * Here the deadline bounds the whole call: a retry starts after its backoff or, when that would leave less than
 * `minAttemptMs` before the deadline, earlier, at the deadline less `minAttemptMs`; with less time than that
 * left, the call ends at once with the last attempt's own status. Calls without a deadline are not bounded.
 */
export function makeDeadlineBoundRetryInterceptor(
  retry: GrpcRetryOptions = temporalRetryOptions(),
  minAttemptMs = MIN_ATTEMPT_MS,
): Interceptor {
  return (options, nextCall) => {
    const deadline = options.deadline instanceof Date ? options.deadline.getTime() : (options.deadline ?? Infinity);
    let delayMs = 0;
    const bounded = makeGrpcRetryInterceptor({
      retryableDecider(attempt, status) {
        if (!retry.retryableDecider(attempt, status)) return false;
        const latestStart = deadline - minAttemptMs - Date.now();
        if (latestStart < 0) return false;
        delayMs = Math.min(retry.delayFunction(attempt, status), latestStart);
        return true;
      },
      // Called right after a positive decision, with the delay that decision settled on.
      delayFunction: () => delayMs,
    });
    return bounded(options, orCancelled(nextCall));
  };
}

/**
 * The next call of the chain, or, when it cannot be made (the connection was closed while a retry waited for its
 * backoff: grpc-js throws "Channel has been shut down"), a call that ends at once with CANCELLED. The SDK's
 * interceptor makes its retries from a timer, where that throw would be an uncaught exception (a process shutting
 * down with a webhook's signal in backoff); here the caller gets the CANCELLED instead.
 */
type NextCall = Parameters<Interceptor>[1];

function orCancelled(nextCall: NextCall): NextCall {
  return (options) => {
    try {
      return nextCall(options);
    } catch (err) {
      return cancelledCall(err instanceof Error ? err.message : String(err));
    }
  };
}

function cancelledCall(details: string): ReturnType<NextCall> {
  const noop = () => undefined;
  const call: ReturnType<NextCall> = {
    start(_metadata, listener) {
      setImmediate(() =>
        listener?.onReceiveStatus?.({ code: grpcStatus.CANCELLED, details, metadata: new Metadata() }),
      );
    },
    cancelWithStatus: noop,
    getPeer: () => '',
    getAuthContext: () => null,
    sendMessageWithContext: noop,
    sendMessage: noop,
    startRead: noop,
    halfClose: noop,
  };
  return call;
}
