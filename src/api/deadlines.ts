import { isGrpcServiceError } from '@temporalio/client';
import { HttpError } from './problem-details';

/**
 * Bounds on the Temporal calls of a request: whatever Temporal or the client library does, the caller gets an
 * answer (a 503 telling it to retry) in time.
 */

/**
 * A hard bound over a call that is already under a gRPC deadline: whatever the client library does (a connect that
 * hangs, an attempt that ignores the deadline), the answer goes out by then. The call itself is left to finish.
 */
export function hardBound<T>(call: Promise<T>, ms: number, what: string): Promise<T> {
  return boundedAnswer(call, ms, what);
}

/**
 * hardBound and answerBefore in one: the call's result, or the hard bound's 503 after `ms`, or `aborted()` once
 * `signal` aborts (the process is shutting down). One promise, one timer and one listener: the webhook receiver
 * runs it on every signal. The call itself is left to finish; a late failure is not an unhandled rejection.
 */
export function boundedAnswer<T>(
  call: Promise<T>,
  ms: number,
  what: string,
  signal?: AbortSignal,
  aborted?: () => Error,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let forget: (() => void) | undefined;
    const settle = (): void => {
      clearTimeout(timer);
      forget?.();
    };
    const timer = setTimeout(() => {
      settle();
      reject(new HttpError(503, `${what} did not answer within ${ms} ms; retry later`, undefined, 5));
    }, ms);
    timer.unref();
    if (signal && aborted) {
      if (signal.aborted) {
        settle();
        reject(aborted());
        return;
      }
      forget = whenAborted(signal, () => {
        settle();
        reject(aborted());
      });
    }
    call.then(
      (value) => {
        settle();
        resolve(value);
      },
      (err: unknown) => {
        settle();
        // The call's own failure, passed on as it is (an Error from the client library, or what the route threw).
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(err);
      },
    );
  });
}

/** The callbacks waiting on each signal: one listener per signal, however many requests wait on it. */
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Runs `fn` once `signal` aborts; the returned function forgets it. A Set entry rather than a listener of its own per
 * call: adding and removing an AbortSignal listener costs more than the rest of this function on the receiver's
 * hot path (docs/benchmarks.md, "The receiver").
 */
export function whenAborted(signal: AbortSignal, fn: () => void): () => void {
  const callbacks = waiting.get(signal) ?? listenOnce(signal);
  callbacks.add(fn);
  return () => void callbacks.delete(fn);
}

/** The one abort listener of `signal`, which runs every callback waiting on it. */
function listenOnce(signal: AbortSignal): Set<() => void> {
  const callbacks = new Set<() => void>();
  waiting.set(signal, callbacks);
  signal.addEventListener(
    'abort',
    () => {
      for (const callback of [...callbacks]) callback();
      callbacks.clear();
    },
    { once: true },
  );
  return callbacks;
}

/**
 * The call's result, or `error()` once `signal` is aborted (the process is shutting down: answer now rather than be
 * cut). The call itself is left to finish.
 */
export function answerBefore<T>(call: Promise<T>, signal: AbortSignal | undefined, error: () => Error): Promise<T> {
  if (!signal) return call;
  call.catch(() => undefined); // a late failure after the answer is not an unhandled rejection
  let forget: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(error());
    else forget = whenAborted(signal, () => reject(error()));
  });
  return Promise.race([call, aborted]).finally(() => forget?.());
}

export const DEFAULT_START_DEADLINE_MS = 30_000;

/** What a start call's deadline needs: the Temporal client's deadline, its length, and the process's drain. */
export interface StartDeadlineDeps {
  client: { withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R> };
  /** Default DEFAULT_START_DEADLINE_MS. */
  startDeadlineMs?: number;
  /** The API's drain (src/api/drain.ts): a call still waiting at the shutdown's hard bound gets the same 503. */
  drain?: { expired: AbortSignal };
}

/**
 * Runs a merchant's start call under a deadline. The workflow keeps going when it passes (a slow bank, or no
 * worker polling), so the merchant is told to retry the same idempotent request: 503 with Retry-After.
 */
export async function withStartDeadline<T>(deps: StartDeadlineDeps, what: string, fn: () => Promise<T>): Promise<T> {
  const ms = deps.startDeadlineMs ?? DEFAULT_START_DEADLINE_MS;
  const deadline = Date.now() + ms;
  try {
    return await answerBefore(
      deps.client.withDeadline(deadline, fn),
      deps.drain?.expired,
      () =>
        new HttpError(
          503,
          `${what} was still waiting when this process shut down; it goes on: retry the same request`,
          undefined,
          1,
        ),
    );
  } catch (err) {
    if (deadlineRanOut(err, deadline)) {
      throw new HttpError(
        503,
        `${what} did not complete within ${ms} ms; it goes on: retry the same request`,
        undefined,
        5,
      );
    }
    throw err;
  }
}

/** How long a merchant's read may wait for a worker to answer its query. */
export const DEFAULT_READ_DEADLINE_MS = 10_000;

/**
 * Runs a merchant's read (a query, which a worker must answer) under a deadline: when none answers in time (every
 * worker down, or a closed run whose query goes to a build no worker runs any more), the merchant gets a 503 with
 * Retry-After instead of an answer that never comes.
 */
export async function withReadDeadline<T>(
  deps: Pick<StartDeadlineDeps, 'client'> & { readDeadlineMs?: number },
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  const ms = deps.readDeadlineMs ?? DEFAULT_READ_DEADLINE_MS;
  const deadline = Date.now() + ms;
  try {
    // The gRPC deadline, and a hard bound a little after it whatever the client library does.
    return await hardBound(deps.client.withDeadline(deadline, fn), ms + 1_000, what);
  } catch (err) {
    if (deadlineRanOut(err, deadline))
      throw new HttpError(
        503,
        `${what} did not answer within ${ms} ms (no worker answered); retry later`,
        undefined,
        5,
      );
    throw err;
  }
}

/**
 * Margin within which a CANCELLED answer counts as the deadline: the server passes the caller's deadline on to its
 * own services, and when that runs out inside them it may answer CANCELLED ("context canceled") a moment before the
 * client sees DEADLINE_EXCEEDED.
 */
const CANCELLED_NEAR_DEADLINE_MS = 250;

/**
 * True when the call failed because its deadline ran out: DEADLINE_EXCEEDED, or CANCELLED at (or within a moment of)
 * the deadline. This service never cancels these calls itself, so a CANCELLED well before the deadline is something
 * else (Temporal going away) and stays that.
 */
export function deadlineRanOut(err: unknown, deadline: number, now: number = Date.now()): boolean {
  if (hasGrpcCode(err, 4 /* DEADLINE_EXCEEDED */)) return true;
  return hasGrpcCode(err, 1 /* CANCELLED */) && now >= deadline - CANCELLED_NEAR_DEADLINE_MS;
}

function hasGrpcCode(err: unknown, code: number): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && Number(e.code) === code) return true;
  }
  return false;
}
