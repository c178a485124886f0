import { ApplicationFailure, allHandlersFinished, condition } from '@temporalio/workflow';
import {
  FinanceApplicationFailureType,
  STATUS_WAIT_LIMITS,
  type FinanceApplicationState,
  type StatusWaitRequest,
  type StatusWaitResult,
} from '../../shared/finance-application';
import { timerSummaries } from './details';

/**
 * Status waits (the facade's long-poll): each is recorded (accepted, a timer, completed), so the validator bounds
 * how many a run holds; they end when the status moves, the workflow is done, their timer fires, or the run closes
 * (then `closing`: the caller asks the next run). Nothing is read for them.
 */
export class StatusWaits {
  private waiting = 0;
  /** The run is ending or continuing as new: new waits are refused, waiting ones answer `closing`. */
  private closing = false;

  constructor(private readonly state: FinanceApplicationState) {}

  /** The update's validator: a bad request, a closing run or one wait too many is refused (nothing recorded). */
  validate(arg: Partial<StatusWaitRequest> | undefined): void {
    const { fromStatus, timeoutMs } = arg ?? {};
    if (
      typeof fromStatus !== 'string' ||
      fromStatus.length === 0 ||
      fromStatus.length > STATUS_WAIT_LIMITS.maxStatusLength ||
      typeof timeoutMs !== 'number' ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs < 1 ||
      timeoutMs > STATUS_WAIT_LIMITS.maxTimeoutMs
    ) {
      throw ApplicationFailure.nonRetryable(
        `fromStatus must be 1 to ${STATUS_WAIT_LIMITS.maxStatusLength} characters and timeoutMs an integer from 1 to ${STATUS_WAIT_LIMITS.maxTimeoutMs}`,
        FinanceApplicationFailureType.InvalidStatusWait,
      );
    }
    if (this.closing) {
      throw ApplicationFailure.nonRetryable(
        'the run is closing; ask again',
        FinanceApplicationFailureType.StatusWaitClosing,
      );
    }
    if (this.waiting >= STATUS_WAIT_LIMITS.maxWaitsPerRun) {
      throw ApplicationFailure.nonRetryable(
        `this application already has ${STATUS_WAIT_LIMITS.maxWaitsPerRun} status waits`,
        FinanceApplicationFailureType.TooManyStatusWaits,
      );
    }
  }

  /** The update's handler: waits (one timer) unless it is already settled, then answers with the state. */
  async wait({ fromStatus, timeoutMs }: StatusWaitRequest): Promise<StatusWaitResult> {
    const settled = () => this.outcome(fromStatus) !== 'timeout';
    this.waiting++;
    try {
      // Already settled: answer without a timer (nothing more recorded than the update itself).
      if (!settled())
        await condition(settled, timeoutMs, { summary: timerSummaries.statusWait(fromStatus, timeoutMs) });
    } finally {
      this.waiting--;
    }
    return { outcome: this.outcome(fromStatus), state: this.state };
  }

  /** Before the run ends or continues as new: waiting status waits answer `closing`, then every handler is done. */
  async finishHandlers(): Promise<void> {
    this.close();
    await condition(allHandlersFinished);
  }

  /** From now on new waits are refused and waiting ones answer `closing`. */
  close(): void {
    this.closing = true;
  }

  /** Why a wait from `fromStatus` would end now; `timeout` while nothing has ended it. */
  outcome(fromStatus: string): StatusWaitResult['outcome'] {
    const { state } = this;
    return state.status !== fromStatus ? 'changed' : state.done ? 'done' : this.closing ? 'closing' : 'timeout';
  }
}
