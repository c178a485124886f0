/** Small helpers for benchmark figures: percentiles over samples, a fixed-width report line. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

/** The middle of `xs` (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function summarize(samplesMs: number[]): {
  n: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
} {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const mean = sorted.reduce((s, v) => s + v, 0) / (sorted.length || 1);
  return {
    n: sorted.length,
    mean,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

export function report(name: string, figures: Record<string, number | string>): void {
  const parts = Object.entries(figures).map(
    ([k, v]) => `${k}=${typeof v === 'number' ? (Number.isInteger(v) ? v : v.toFixed(2)) : v}`,
  );
  process.stdout.write(`${name.padEnd(44)} ${parts.join('  ')}\n`);
}

/** Runs `task` for each of `count` items with at most `concurrency` in flight; returns per-item latencies (ms). */
export async function runPool(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const start = performance.now();
      await task(i);
      latencies.push(performance.now() - start);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return latencies;
}
