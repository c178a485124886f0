import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import {
  FinanceApplicationFailureType,
  STATUS_WAIT_LIMITS,
  waitForStatusChangeUpdate,
  type FinanceApplicationState,
  type StatusWaitResult,
} from '../shared/finance-application';
import { financeApplicationWorkflowId } from '../shared/ids';
import type { financeApplicationWorkflow } from '../workflows/finance-application';
import { getFinanceApplication } from './finance-applications';

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

/**
 * Status waits shared within one process: at most one `waitForStatusChange` update in flight per application and
 * from-status, whatever the number of callers waiting on it. Each update waits the longest a wait may
 * (STATUS_WAIT_LIMITS.maxTimeoutMs) whatever the callers' own timeouts (they stop listening at theirs), so a
 * process adds at most one update per application, from-status and minute while nothing changes.
 */
export class FinanceApplicationWaits {
  private readonly inFlight = new Map<string, Promise<StatusWaitResult>>();

  constructor(private readonly client: Client) {}

  /** Updates this process has in flight now. */
  get size(): number {
    return this.inFlight.size;
  }

  /** The update in flight for (reference, fromStatus), sent now if there is none. */
  shared(merchantReference: string, fromStatus: string): Promise<StatusWaitResult> {
    const key = JSON.stringify([merchantReference, fromStatus]);
    let wait = this.inFlight.get(key);
    if (!wait) {
      const handle = this.client.workflow.getHandle<typeof financeApplicationWorkflow>(
        financeApplicationWorkflowId(merchantReference),
      );
      wait = handle
        .executeUpdate(waitForStatusChangeUpdate, {
          args: [{ fromStatus, timeoutMs: STATUS_WAIT_LIMITS.maxTimeoutMs }],
        })
        .finally(() => this.inFlight.delete(key));
      // A caller that stopped listening (its timeout) leaves no unhandled rejection behind.
      wait.catch(() => undefined);
      this.inFlight.set(key, wait);
    }
    return wait;
  }
}

/**
 * Waits until the application's status differs from `fromStatus` (answers at once if it already does), the
 * workflow stops following it, or `timeoutMs` passes; returns how it ended and the application then. Served by
 * the workflow (an update that waits on a condition), never by repeated reads: one read at the start, one at a
 * timeout. Throws WorkflowNotFoundError for an unknown reference, TooManyStatusWaitsError when the application
 * takes no more waits (retry shortly), RangeError for a timeout out of bounds.
 */
export async function waitForFinanceApplicationChange(
  client: Client,
  merchantReference: string,
  options: WaitForChangeOptions,
): Promise<FinanceApplicationChange> {
  const { fromStatus, timeoutMs } = options;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > STATUS_WAIT_LIMITS.maxTimeoutMs) {
    throw new RangeError(`timeoutMs must be an integer from 0 to ${STATUS_WAIT_LIMITS.maxTimeoutMs}`);
  }
  const waits = options.waits ?? new FinanceApplicationWaits(client);
  const deadline = Date.now() + timeoutMs;
  let state = await getFinanceApplication(client, merchantReference);
  for (;;) {
    if (state.status !== fromStatus) return { outcome: 'changed', state };
    if (state.done) return { outcome: 'done', state };
    const remaining = deadline - Date.now();
    if (remaining <= 0) return { outcome: 'timeout', state };
    let result: StatusWaitResult | undefined;
    try {
      result = await within(waits.shared(merchantReference, fromStatus), remaining);
    } catch (err) {
      const failureType = err instanceof WorkflowUpdateFailedError ? updateFailureType(err) : undefined;
      if (failureType === FinanceApplicationFailureType.TooManyStatusWaits) {
        throw new TooManyStatusWaitsError(merchantReference);
      }
      // The run closed under the update (completed, or continued as new): read what it left, and go on from there.
      const closing = failureType === FinanceApplicationFailureType.StatusWaitClosing;
      if (!closing && !(err instanceof WorkflowNotFoundError) && !isClosedRunError(err)) throw err;
      await pause(Math.min(CLOSING_RETRY_MS, Math.max(0, deadline - Date.now())));
      state = await getFinanceApplication(client, merchantReference);
      continue;
    }
    if (result === undefined) {
      // Our own timeout: the application as it stands now (one read).
      state = await getFinanceApplication(client, merchantReference);
      continue;
    }
    state = result.state;
    if (result.outcome === 'closing') {
      await pause(Math.min(CLOSING_RETRY_MS, Math.max(0, deadline - Date.now())));
      state = await getFinanceApplication(client, merchantReference);
    }
    // 'timeout' of a shared update that started before this caller: the loop sends the next one.
  }
}

function updateFailureType(err: WorkflowUpdateFailedError): string | undefined {
  return err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : undefined;
}

/** An update sent to a run that completed meanwhile ("workflow execution already completed"). */
function isClosedRunError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof Error && /already completed/i.test(e.message)) return true;
  }
  return false;
}

/** The promise's value, or undefined once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
