import { join } from 'node:path';
import { projectRoot } from '../../src/temporal/binaries';
import { DEFAULT_SIZES, type ChaosSizes } from './plan';
import { formatFindings, formatSummary, formatTable } from './report';
import { runSeed, type SeedResult } from './scenario';

/**
 * `npm run chaos`: the whole stack as separate processes under a seeded fault plan, compared with the bank
 * sandbox's ground truth. Never part of `npm test`. Exits 1 when any seed shows something lost, wrong or
 * acknowledged-but-lost; 2 when a seed did not finish within its time bound.
 *
 * CHAOS_SEED=n or CHAOS_SEEDS=1,2,3 (default 1); sizes: CHAOS_APPLICATIONS (100), CHAOS_REFRESHES (20),
 * CHAOS_DURATION_S (120: faults and load), CHAOS_WORKERS (2), CHAOS_APIS (2), CHAOS_TEMPORAL_RESTARTS (1–2 from
 * the seed); bounds: CHAOS_SETTLE_S (300: waiting for every workflow afterwards), CHAOS_SEED_TIMEOUT_S (600).
 * Logs, the plan and the full result of each seed go to data/chaos/<time>-seed-<n>/ (CHAOS_DIR).
 */
const COMMAND = 'npm run chaos';

function intFromEnv(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`${name} must be a whole number ≥ ${min} (got "${raw}")\n`);
    process.exit(78);
  }
  return value;
}

function seedsFromEnv(): number[] {
  const raw = process.env.CHAOS_SEEDS ?? process.env.CHAOS_SEED ?? '1';
  const seeds = raw.split(',').map((s) => Number(s.trim()));
  if (seeds.some((s) => !Number.isInteger(s) || s < 0)) {
    process.stderr.write(`CHAOS_SEEDS / CHAOS_SEED must be whole numbers, comma-separated (got "${raw}")\n`);
    process.exit(78);
  }
  return seeds;
}

async function main(): Promise<number> {
  const sizes: ChaosSizes = {
    applications: intFromEnv('CHAOS_APPLICATIONS', DEFAULT_SIZES.applications),
    refreshes: intFromEnv('CHAOS_REFRESHES', DEFAULT_SIZES.refreshes),
    durationMs: intFromEnv('CHAOS_DURATION_S', DEFAULT_SIZES.durationMs / 1000, 10) * 1000,
    workers: intFromEnv('CHAOS_WORKERS', DEFAULT_SIZES.workers, 1),
    apis: intFromEnv('CHAOS_APIS', DEFAULT_SIZES.apis, 1),
    temporalRestarts: process.env.CHAOS_TEMPORAL_RESTARTS ? intFromEnv('CHAOS_TEMPORAL_RESTARTS', 1) : undefined,
  };
  const settleMs = intFromEnv('CHAOS_SETTLE_S', 300) * 1000;
  const seedTimeoutMs = intFromEnv('CHAOS_SEED_TIMEOUT_S', 600, 60) * 1000;
  const dir = process.env.CHAOS_DIR ?? join(projectRoot(), 'data', 'chaos');
  const seeds = seedsFromEnv();
  const out = (text: string) => process.stdout.write(`${text}\n`);
  out(
    `${COMMAND}: seeds ${seeds.join(', ')}; ${sizes.applications} applications, ${sizes.refreshes} refreshes, ` +
      `${sizes.durationMs / 1000} s of faults, ${sizes.workers} workers, ${sizes.apis} API processes; node ${process.version}`,
  );

  const results: SeedResult[] = [];
  for (const seed of seeds) {
    const runDir = join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-seed-${seed}`);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`seed ${seed} did not finish within ${seedTimeoutMs / 1000} s`)),
        seedTimeoutMs,
      );
    });
    try {
      const result = await Promise.race([runSeed({ seed, sizes, settleMs, runDir, log: out }), timedOut]);
      results.push(result);
      out(`\nseed ${seed} (${(result.elapsedMs / 1000).toFixed(0)} s):\n${formatTable(result.rows)}`);
      out(formatFindings(result));
      out('');
    } catch (err) {
      out(`seed ${seed} failed: ${(err as Error).stack ?? String(err)}`);
      out(`  logs: ${runDir}`);
      return 2; // the exit handler kills every process the run started
    } finally {
      clearTimeout(timer);
    }
  }
  out(formatSummary(results, COMMAND));
  const bad = results.some((r) => r.counts.lost + r.counts.wrong + r.counts.ackLost > 0);
  return bad ? 1 : 0;
}

process.once('SIGINT', () => process.exit(130));
process.once('SIGTERM', () => process.exit(143));
main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`chaos failed: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(2);
  },
);
