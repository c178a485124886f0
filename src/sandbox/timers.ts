/**
 * Every timer the sandbox starts goes through one Timers object, so stop() leaves no open handle (jest) and
 * reset() can cancel lifecycles and pending deliveries at once.
 */
export class Timers {
  private readonly handles = new Set<NodeJS.Timeout>();
  private readonly sleepers = new Set<() => void>();
  private controller = new AbortController();

  /** Aborted when cancelAll() runs: in-flight HTTP calls listen to it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cancelled(): boolean {
    return this.controller.signal.aborted;
  }

  after(ms: number, fn: () => void): void {
    const handle = setTimeout(
      () => {
        this.handles.delete(handle);
        fn();
      },
      Math.max(0, ms),
    );
    this.handles.add(handle);
  }

  every(ms: number, fn: () => void): void {
    const handle = setInterval(fn, ms);
    this.handles.add(handle);
  }

  /** Resolves true after `ms`, or false as soon as cancelAll() runs. */
  sleep(ms: number): Promise<boolean> {
    if (this.cancelled) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = (): void => {
        this.sleepers.delete(wake);
        resolve(false);
      };
      this.sleepers.add(wake);
      this.after(ms, () => {
        this.sleepers.delete(wake);
        resolve(true);
      });
    });
  }

  /** Clears every timer, wakes every sleeper with false and aborts in-flight calls; then starts afresh. */
  cancelAll(): void {
    for (const handle of this.handles) clearTimeout(handle);
    this.handles.clear();
    this.controller.abort();
    for (const wake of [...this.sleepers]) wake();
    this.controller = new AbortController();
  }
}
