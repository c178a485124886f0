/**
 * Spaces this process's bank status reads at least 1/ratePerSecond apart, measured between the reads as they
 * actually go out (after a stalled event loop they do not leave together). Temporal's task-queue rate limit
 * bounds the reads of all workers together, but it is a token bucket that lets a backlog start with a burst
 * and it dispatches tasks, not HTTP calls; this pacer makes one worker's calls to the bank smooth as well.
 */
export class ReadPacer {
  private readonly intervalMs: number;
  private tail: Promise<void> = Promise.resolve();
  private lastAt = 0;

  constructor(
    ratePerSecond: number,
    private readonly clock: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void> } = {
      now: () => performance.now(),
      sleep,
    },
  ) {
    if (!(ratePerSecond > 0)) throw new RangeError('ratePerSecond must be positive');
    this.intervalMs = 1000 / ratePerSecond;
  }

  private wanted(): number {
    return this.lastAt + this.intervalMs - this.clock.now();
  }

  /** Resolves when this read may go out; rejects if `signal` aborts while waiting (the slot is given up). */
  wait(signal?: AbortSignal): Promise<void> {
    const turn = this.tail.then(async () => {
      signal?.throwIfAborted();
      // A loop: a timer may fire a fraction of a millisecond early.
      for (let delay = this.wanted(); delay > 0; delay = this.wanted()) await this.clock.sleep(delay, signal);
      this.lastAt = this.clock.now();
    });
    // The next waiter follows this one whether it went out or was aborted.
    this.tail = turn.catch(() => undefined);
    return turn;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      },
      { once: true },
    );
  });
}
