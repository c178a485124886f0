import { randomUUID } from 'node:crypto';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import {
  FinanceApplicationFailureType,
  STATUS_WAIT_LIMITS,
  waitForStatusChangeUpdate,
  type FinanceApplicationState,
  type StatusWaitResult,
} from '../shared/finance-application';
import type { financeApplicationWorkflow } from '../workflows/finance-application/workflow';
import { readFinanceApplication } from './finance-application-reads';
import type { MerchantScope } from './merchant-scope';

/** How a wait for a change ended, with the application as it then stood. */
export interface FinanceApplicationChange {
  /**
   * `changed`: the status differs from the one waited from; `done`: the workflow stopped following the application
   * with that status unchanged (waiting again is pointless); `timeout`: no change within the timeout.
   */
  outcome: 'changed' | 'done' | 'timeout';
  state: FinanceApplicationState;
}

export interface WaitForChangeOptions {
  /** The status the caller knows: the answer comes once the application's status differs from it. */
  fromStatus: string;
  /** At most STATUS_WAIT_LIMITS.maxTimeoutMs (60 s). */
  timeoutMs: number;
  /** The process's shared waits (one update per application and from-status); a private one when absent. */
  waits?: FinanceApplicationWaits;
  /** Aborted when the caller goes away (an HTTP client that disconnected): stop listening at once. */
  signal?: AbortSignal;
  /**
   * Aborted to end the wait now as its timeout would (one read, `timeout` unless the status changed): a process that
   * shuts down answers its long-polls instead of cutting them.
   */
  endEarly?: AbortSignal;
}

/** The application already holds as many status waits as it takes (other processes wait on it): retry shortly. */
export class TooManyStatusWaitsError extends Error {
  constructor(readonly merchantReference: string) {
    super(`Finance application ${merchantReference} has too many status waits; retry shortly`);
    this.name = 'TooManyStatusWaitsError';
  }
}

/** A run that is continuing as new answers `closing` (or refuses a wait): its successor takes the next one. */
const CLOSING_RETRY_MS = 200;

/** A process's one update for (reference, fromStatus): listened to while someone waits, re-attached by its id. */
interface SharedWait {
  updateId: string;
  /** When the update's own timer ends it in the workflow: until then a new waiter re-attaches to it. */
  endsAt: number;
  listeners: number;
  /** The listening call (with its abort), while someone listens. */
  call?: { result: Promise<StatusWaitResult>; abort: AbortController };
}

/** One caller's share of a wait: its result, and leave() when it stops listening (a timeout, a disconnect). */
export interface JoinedWait {
  result: Promise<StatusWaitResult>;
  leave(): void;
}

/**
 * Status waits shared within one process: at most one `waitForStatusChange` update per application and
 * from-status at a time, whatever the number of callers waiting on it. Each update waits the longest a wait may
 * (STATUS_WAIT_LIMITS.maxTimeoutMs), whatever the callers' timeouts, and keeps its id: a caller arriving before it
 * ends re-attaches to it (the server deduplicates an update id within a run) instead of adding another. So a
 * process adds at most one update per application, from-status and minute while nothing changes. The process
 * listens only while someone waits: when the last caller leaves, the listening call is aborted (nothing is left
 * polling Temporal, and shutdown is clean); the update itself ends in the workflow at its timer.
 */
export class FinanceApplicationWaits {
  private readonly shared = new Map<string, SharedWait>();
  private readonly updateTimeoutMs: number;

  /** `updateTimeoutMs`: how long each update waits in the workflow (STATUS_WAIT_LIMITS.maxTimeoutMs; tests shorten it). */
  constructor(
    private readonly client: Client,
    options: { updateTimeoutMs?: number } = {},
  ) {
    this.updateTimeoutMs = options.updateTimeoutMs ?? STATUS_WAIT_LIMITS.maxTimeoutMs;
  }

  /** Calls listening to an update now. */
  get listening(): number {
    return [...this.shared.values()].filter((w) => w.call).length;
  }

  /** Joins the wait for (the application's workflow, fromStatus): the current update, or a new one. */
  join(workflowId: string, fromStatus: string): JoinedWait {
    const key = JSON.stringify([workflowId, fromStatus]);
    const now = Date.now();
    this.forgetEnded(now);
    let wait = this.shared.get(key);
    if (!wait || now >= wait.endsAt) {
      wait = { updateId: randomUUID(), endsAt: now + this.updateTimeoutMs, listeners: 0 };
      this.shared.set(key, wait);
    }
    const current = wait;
    const call = (current.call ??= this.listen(workflowId, fromStatus, current, key));
    current.listeners++;
    let left = false;
    return {
      result: call.result,
      leave: () => {
        if (left) return;
        left = true;
        current.listeners--;
        if (current.listeners === 0 && current.call) {
          current.call.abort.abort();
          current.call = undefined;
        }
      },
    };
  }

  /** Sends the update (or re-attaches to it: same id) and listens until it completes or the listeners leave. */
  private listen(
    workflowId: string,
    fromStatus: string,
    wait: SharedWait,
    key: string,
  ): NonNullable<SharedWait['call']> {
    const abort = new AbortController();
    const handle = this.client.workflow.getHandle<typeof financeApplicationWorkflow>(workflowId);
    const result = this.client.withAbortSignal(abort.signal, () =>
      handle.executeUpdate(waitForStatusChangeUpdate, {
        updateId: wait.updateId,
        args: [{ fromStatus, timeoutMs: this.updateTimeoutMs }],
      }),
    );
    // Completed, refused or failed: the next waiter starts a new update (an aborted listen keeps the id).
    result.then(
      () => this.shared.get(key) === wait && this.shared.delete(key),
      () => !abort.signal.aborted && this.shared.get(key) === wait && this.shared.delete(key),
    );
    return { result, abort };
  }

  private forgetEnded(now: number): void {
    for (const [key, wait] of this.shared) if (wait.listeners === 0 && now >= wait.endsAt) this.shared.delete(key);
  }
}

/**
 * Waits until the application's status differs from `fromStatus` (answers at once if it already does), the
 * workflow stops following it, or `timeoutMs` passes; returns how it ended and the application then. Served by
 * the workflow (an update that waits on a condition), never by repeated reads: one read at the start, one at a
 * timeout. Throws WorkflowNotFoundError for an unknown reference, TooManyStatusWaitsError when the application
 * takes no more waits (retry shortly), RangeError for a timeout out of bounds, and the signal's reason once
 * `signal` is aborted (the caller went away: it stops listening at once).
 */
export async function waitForFinanceApplicationChange(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
  options: WaitForChangeOptions,
): Promise<FinanceApplicationChange> {
  const { fromStatus, timeoutMs, signal, endEarly } = options;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > STATUS_WAIT_LIMITS.maxTimeoutMs) {
    throw new RangeError(`timeoutMs must be an integer from 0 to ${STATUS_WAIT_LIMITS.maxTimeoutMs}`);
  }
  const waits = options.waits ?? new FinanceApplicationWaits(client);
  const deadline = Date.now() + timeoutMs;
  const read = await readFinanceApplication(client, merchant, merchantReference);
  const { workflowId } = read;
  let state = read.state;
  const reread = async () => (await readFinanceApplication(client, merchant, merchantReference)).state;
  for (;;) {
    signal?.throwIfAborted();
    if (state.status !== fromStatus) return { outcome: 'changed', state };
    if (state.done) return { outcome: 'done', state };
    const remaining = deadline - Date.now();
    if (remaining <= 0 || endEarly?.aborted) return { outcome: 'timeout', state };
    const joined = waits.join(workflowId, fromStatus);
    let result: StatusWaitResult | undefined;
    try {
      result = await within(joined.result, remaining, signal, endEarly);
    } catch (err) {
      signal?.throwIfAborted();
      const failureType = err instanceof WorkflowUpdateFailedError ? updateFailureType(err) : undefined;
      if (failureType === FinanceApplicationFailureType.TooManyStatusWaits) {
        throw new TooManyStatusWaitsError(merchantReference);
      }
      // The run closed under the update (completed, or continued as new): read what it left, and go on from there.
      const closing = failureType === FinanceApplicationFailureType.StatusWaitClosing;
      if (!closing && !(err instanceof WorkflowNotFoundError) && !isClosedRunError(err)) throw err;
      await pause(Math.min(CLOSING_RETRY_MS, Math.max(0, deadline - Date.now())));
      state = await reread();
      continue;
    } finally {
      joined.leave();
    }
    if (result === undefined) {
      // Our own timeout: the application as it stands now (one read).
      state = await reread();
      continue;
    }
    state = result.state;
    if (result.outcome === 'closing') {
      await pause(Math.min(CLOSING_RETRY_MS, Math.max(0, deadline - Date.now())));
      state = await reread();
    }
    // 'timeout' of a shared update that started before this caller: the loop sends the next one.
  }
}

function updateFailureType(err: WorkflowUpdateFailedError): string | undefined {
  return err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : undefined;
}

/** An update sent to a run that completed meanwhile ("workflow execution already completed"). */
export function isClosedRunError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof Error && /already completed/i.test(e.message)) return true;
  }
  return false;
}

/**
 * The promise's value, or undefined once `ms` have passed or `endEarly` is aborted; rejects when `signal` is
 * aborted.
 */
async function within<T>(
  promise: Promise<T>,
  ms: number,
  signal?: AbortSignal,
  endEarly?: AbortSignal,
): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  let onEnd: (() => void) | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((resolve, reject) => {
        timer = setTimeout(() => resolve(undefined), ms);
        onAbort = () => reject(signal?.reason instanceof Error ? signal.reason : new Error('wait aborted'));
        signal?.addEventListener('abort', onAbort, { once: true });
        onEnd = () => resolve(undefined);
        endEarly?.addEventListener('abort', onEnd, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    if (onEnd) endEarly?.removeEventListener('abort', onEnd);
  }
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
