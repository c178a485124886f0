/**
 * A long test as named phases, each with a budget: every phase prints its duration when it ends, and one that
 * overruns fails at once with "phase X took over Ns (budget Ns)" and the durations of those before it, so a failure
 * on a slow machine says what was slow instead of hitting jest's timeout. Budgets are hang detectors, not
 * assertions: set them to a generous multiple of the measured duration (docs/testing.md lists the measurements).
 */
export interface Phases {
  /** Runs `fn` as phase `name`; rejects when it takes longer than `budgetMs` (the work itself is not cancelled). */
  run<T>(name: string, budgetMs: number, fn: () => Promise<T>): Promise<T>;
  /** "name 12.3 s, other 40.0 s": the phases finished so far. */
  summary(): string;
}

/** What jest's timeout for a test of these phases should be: their budgets and `setupMs`, so a phase fails first. */
export function phasesTimeout(budgetsMs: Record<string, number>, setupMs = 60_000): number {
  return Object.values(budgetsMs).reduce((sum, ms) => sum + ms, setupMs);
}

const seconds = (ms: number) => `${(ms / 1_000).toFixed(1)} s`;

export function phases(
  test: string,
  print: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Phases {
  const done: { name: string; ms: number }[] = [];
  const summary = () => done.map((p) => `${p.name} ${seconds(p.ms)}`).join(', ') || 'none';
  return {
    summary,
    async run<T>(name: string, budgetMs: number, fn: () => Promise<T>): Promise<T> {
      const started = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const overrun = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const message =
            `${test}: phase "${name}" took over ${seconds(budgetMs)} (budget ${seconds(budgetMs)}); ` +
            `phases before it: ${summary()}`;
          print(`[phases] ${message}`);
          reject(new Error(message));
        }, budgetMs);
      });
      const work = fn().catch((err: unknown) => {
        // Its own failure (an `eventually` that gave up, an expectation) keeps its message, named by phase.
        const failure = err instanceof Error ? err : new Error(String(err));
        failure.message = `${test}: phase "${name}" failed after ${seconds(Date.now() - started)}: ${failure.message}`;
        throw failure;
      });
      work.catch(() => undefined); // an overrun already failed the phase: a later rejection is not unhandled
      try {
        const result = await Promise.race([work, overrun]);
        const ms = Date.now() - started;
        done.push({ name, ms });
        print(`[phases] ${test}: ${name} ${seconds(ms)} (budget ${seconds(budgetMs)})`);
        return result;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
