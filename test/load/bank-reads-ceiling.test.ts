import { randomUUID } from 'node:crypto';
import { startFinanceApplication } from '../../src/client/finance-applications';
import { runPool } from '../../tools/bench/stats';
import { startTestStack, type TestStack } from '../helpers/stack';
import { bundleWorkflows, eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';
import { phases, phasesTimeout } from '../helpers/phases';

const CEILING = Number(process.env.CEILING_TEST_RATE ?? 50);
const APPLICATIONS = Number(process.env.CEILING_TEST_APPS ?? 2_000);
const OUTAGE_MS = 65_000;
/**
 * Each phase's budget: about 3× its duration measured alone on a loaded 2-core machine (docs/testing.md), so a slow
 * machine still passes and a stuck phase fails naming itself. The starts and the reads scale with APPLICATIONS.
 */
// Hang detectors, not timings: about twice the slowest phase seen (starts: 248 s for 2,000 on a 2-core machine with
// other work running, 124 ms each), so a slow machine passes and a stuck one names its phase.
const BUDGETS = {
  starts: Math.max(60_000, APPLICATIONS * 300),
  outage: OUTAGE_MS + 60_000,
  reads: Math.max(120_000, APPLICATIONS * 210),
};

/**
 * The bank is a shared resource: after a worker outage, every poll that fell due while no worker ran is due
 * at once. The ceiling (BANK_MAX_READS_PER_SECOND: Temporal's task-queue activity rate limit on the
 * bank-reads queue, and the worker's own ReadPacer) spreads them out: the bank's own record of its API calls
 * never shows more reads in any one-second window than the ceiling, and every application is read again.
 * (CEILING_TEST_APPS / CEILING_TEST_RATE scale it; CEILING_TEST_DEBUG=1 prints the per-second counts.)
 */
describe('bank read ceiling after a worker outage (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      worker: { bankMaxReadsPerSecond: CEILING },
      // The bundle a worker without tracing runs: the tracing interceptors halve the rate of starts.
      workflowBundle: await bundleWorkflows(require.resolve('../../src/workflows'), { tracingInterceptors: false }),
    });
  }, 120_000);
  afterAll(async () => stack?.close());

  it(
    `${APPLICATIONS} polls due at once never exceed ${CEILING} bank reads a second, and each application is read`,
    async () => {
      const phase = phases('bank-reads-ceiling');
      // Customers who have not acted yet: IN_PROGRESS for days, no webhook.
      stack.sandbox.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 10 * 86_400_000 }] });
      const run = randomUUID().slice(0, 8);
      const ids: string[] = [];
      await phase.run(`starts (${APPLICATIONS} applications)`, BUDGETS.starts, () =>
        runPool(APPLICATIONS, 32, async (i) => {
          const started = await startFinanceApplication(
            stack.t.client,
            TEST_MERCHANT,
            {
              merchantReference: `ceiling-${run}-${i}`,
              application: { redirectUrl: 'https://shop.example/back' },
              // Every application polls every 60 s for its first hour: all are due again within one outage, and
              // afterwards they ask 33 reads a second, under the ceiling, so the backlog drains.
              settings: { fastPollIntervalMs: 60_000, responsiveWindowMs: 3_600_000 },
            },
            { taskQueue: stack.t.taskQueue },
          );
          ids.push(started.financeApplicationId);
        }),
      );

      // The outage: no worker for longer than the poll interval, so every application's next poll is due.
      const outageStart = Date.now();
      const restartedAt = await phase.run('outage (worker stopped, restarted)', BUDGETS.outage, async () => {
        await stack.stopWorker();
        await new Promise((r) => setTimeout(r, OUTAGE_MS));
        const at = new Date().toISOString();
        await stack.startWorker();
        return at;
      });

      const readsSince = () =>
        stack.sandbox.control.apiCalls().filter((c) => c.route === 'getStatus' && c.at >= restartedAt);
      // Every application read again after the restart: at CEILING a second the 2,000 due reads take 40 s. (With
      // polls asking more than the ceiling, the backlog never drained and Temporal's matching, not FIFO across its
      // partitions, left the last application unread for minutes.)
      const reads = await phase.run('reads (every application read again)', BUDGETS.reads, () =>
        eventually(
          () => {
            const calls = readsSince();
            const readIds = new Set(calls.map((c) => c.path.split('/')[2]));
            return ids.every((id) => readIds.has(id)) ? calls : undefined;
          },
          BUDGETS.reads + 10_000, // the phase's budget is what fails first, naming the phase
          500,
        ),
      );
      expect(Date.now() - outageStart).toBeGreaterThan(OUTAGE_MS);

      // The bank's count per second, over every one-second window (sliding, in 100 ms steps).
      const times = reads.map((c) => Date.parse(c.at)).sort((a, b) => a - b);
      let worst = 0;
      for (let start = times[0]!; start <= times.at(-1)!; start += 100) {
        const inWindow = times.filter((t) => t >= start && t < start + 1_000).length;
        worst = Math.max(worst, inWindow);
      }
      if (process.env.CEILING_TEST_DEBUG) {
        const t0 = times[0]!;
        const buckets = new Map<number, number>();
        for (const t of times)
          buckets.set(Math.floor((t - t0) / 1000), (buckets.get(Math.floor((t - t0) / 1000)) ?? 0) + 1);
        console.log('PER-SECOND', JSON.stringify([...buckets]), 'worst sliding', worst);
      }
      expect(reads.length).toBeGreaterThanOrEqual(APPLICATIONS);
      expect(worst).toBeLessThanOrEqual(CEILING);
    },
    phasesTimeout(BUDGETS),
  );
});
