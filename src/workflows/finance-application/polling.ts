import { CancellationScope, isCancellation, log } from '@temporalio/workflow';
import type { StatusRead } from '../../activities/types';
import type { FinanceApplicationState, StatusSource } from '../../shared/finance-application';
import { now, poller, reads } from './proxies';
import { failureType, isCancelledActivity, isUnknownAtBank } from './failures';
import type { Reporter } from './reporting';
import { learnedAt, type FinanceApplication } from './state';

/**
 * The status reads of the finance application: one read per batch of webhooks, and beside the loop one polling
 * activity (its retries, scheduled by the poll policy, are the polls: samples-typescript `polling/infrequent`),
 * started again when what it was started from changed.
 */

/** One running polling activity and what it came back with. */
export interface Poll {
  scope: CancellationScope;
  /** pollKey() when it started. */
  since: string;
  settled: boolean;
  read?: StatusRead;
  error?: unknown;
}

/** What a settled poll came back with, as the loop acts on it. */
export type PollOutcome = 'read' | 'cancelled' | 'unknown_at_bank' | 'failed';

/**
 * What a running poll was started from: a change of it makes the poll start again. Only webhooks proving live
 * count: a change a webhook announced keeps the running poll, which finds the new status at its next read, and a
 * change found by polling settles the poll, which then starts afresh.
 */
export function pollKey(state: FinanceApplicationState): string {
  return `${state.webhooksLive}`;
}

/** A settled poll's outcome. */
export function pollOutcome(poll: Pick<Poll, 'read' | 'error'>): PollOutcome {
  if (poll.read) return 'read';
  if (poll.error === undefined || isCancellation(poll.error) || isCancelledActivity(poll.error)) return 'cancelled';
  return isUnknownAtBank(poll.error) ? 'unknown_at_bank' : 'failed';
}

export class Polling {
  private poll: Poll | undefined;

  constructor(
    private readonly app: FinanceApplication,
    private readonly report: Reporter,
    private readonly merchantId: string,
  ) {}

  /**
   * One read on the bank-reads queue (after a webhook). Never fatal: the poll or the next webhook reads again.
   * `announcedAt`: workflow time of the first webhook that asked for it (the delay metric).
   */
  async readStatus(source: StatusSource, announcedAt?: number): Promise<void> {
    const { app, report } = this;
    try {
      const read: StatusRead = await reads(`Read status (${source})`, this.merchantId).getApplicationStatus({
        financeApplicationId: app.state.financeApplicationId!,
        merchantReference: app.merchantReference,
        source: source === 'webhook' ? 'webhook' : 'poll',
      });
      const change = app.read(read.status, source, learnedAt(now(), read.readAt), read.webhooksKnown);
      report.knownAgain();
      if (change) report.changed(change, announcedAt);
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (isUnknownAtBank(err)) report.unknownAtBank();
      else report.readFailed(err, source);
    }
  }

  /** The running poll has come back. */
  settled(): boolean {
    return this.poll?.settled === true;
  }

  /**
   * Takes what the settled poll found (a new status, a cancellation, or a failure); the next running() starts
   * another. Returns true when it failed outright (bank errors are retried inside it): the loop waits before that.
   */
  takeSettled(): boolean {
    const failed = this.took(this.poll!);
    this.poll = undefined;
    return failed;
  }

  /** The poll to wait on: the running one, or a new one when what it was started from has changed. */
  running(): Poll {
    const key = () => pollKey(this.app.state);
    if (this.poll && this.poll.since !== key()) {
      this.retire(this.poll);
      this.poll = undefined;
    }
    this.poll ??= this.start(key());
    return this.poll;
  }

  /** The loop ends or continues as new: the poll is no longer wanted. */
  stop(): void {
    if (this.poll) this.retire(this.poll);
  }

  private start(since: string): Poll {
    const { app } = this;
    const input = app.pollInput(now());
    const poll: Poll = { settled: false, scope: new CancellationScope(), since };
    poll.scope
      .run(() =>
        poller(this.merchantId).pollApplicationStatus({
          financeApplicationId: app.state.financeApplicationId!,
          merchantReference: app.merchantReference,
          ...input,
        }),
      )
      .then(
        (read) => (poll.read = read),
        (err: unknown) => (poll.error = err),
      )
      .finally(() => (poll.settled = true));
    return poll;
  }

  /** Stops a poll that is no longer wanted (cancelled without waiting); what it found if it had settled is taken. */
  private retire(poll: Poll): void {
    if (poll.settled) this.took(poll);
    else poll.scope.cancel();
  }

  private took(poll: Poll): boolean {
    const { app, report } = this;
    switch (pollOutcome(poll)) {
      case 'read': {
        const read = poll.read!;
        const change = app.read(read.status, 'poll', learnedAt(now(), read.readAt), read.webhooksKnown);
        report.knownAgain();
        if (change) report.changed(change);
        return false;
      }
      case 'cancelled':
        return false;
      case 'unknown_at_bank':
        report.unknownAtBank();
        return true;
      case 'failed':
        app.readFailed();
        log.error('Polling activity failed; polling starts again later', {
          ...report.ids(),
          failureType: failureType(poll.error),
          error: poll.error instanceof Error ? poll.error.message : 'unknown',
        });
        return true;
    }
  }
}
