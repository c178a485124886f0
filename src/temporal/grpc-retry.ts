import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type GrpcRetryOptions } from '@temporalio/client';

type Interceptor = ReturnType<typeof makeGrpcRetryInterceptor>;

/** The least time before the deadline a retry is started with (a signal takes milliseconds, a busy one more). */
export const MIN_ATTEMPT_MS = 500;

/**
 * The SDK's gRPC retry interceptor (same retryable codes, same backoff), bounded by the call's deadline.
 *
 * The SDK's own interceptor hands every attempt the call's one absolute deadline (`withDeadline`) and schedules
 * its backoff without looking at it. After a retryable failure — typically RESOURCE_EXHAUSTED "BusyWorkflow",
 * which Temporal answers when a signal cannot get the workflow's lock, and which the SDK backs off 1.4–2 s, then
 * 2.3–3.5 s more — the next attempt can start after the deadline: grpc-js fails it at once with
 * `DEADLINE_EXCEEDED: Deadline exceeded after 0.000s, waiting for metadata filters` (and still sends it, with
 * `grpc-timeout: 0m`), later than the deadline promised, and the status that mattered is lost.
 * Here the deadline bounds the whole call: a retry starts after its backoff or, when that would leave less than
 * `minAttemptMs` before the deadline, earlier, at the deadline less `minAttemptMs`; with less time than that
 * left, the call ends at once with the last attempt's own status. Calls without a deadline retry as the SDK's.
 */
export function makeDeadlineBoundRetryInterceptor(
  retry: GrpcRetryOptions = defaultGrpcRetryOptions(),
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
    return bounded(options, nextCall);
  };
}
