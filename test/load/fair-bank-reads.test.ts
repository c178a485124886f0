import { randomUUID } from 'node:crypto';
import { startFinanceApplication } from '../../src/client/finance-applications';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { runPool } from '../../tools/bench/stats';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, type TestStack } from '../helpers/stack';
import { phases, phasesTimeout } from '../helpers/phases';

const CEILING = 5; // bank reads a second (BANK_MAX_READS_PER_SECOND)
const FLOOD = Number(process.env.FAIR_READS_TEST_FLOOD ?? 120); // shop-a's applications polling at the 1 s floor
const FEW = 3; // shop-b's applications, and as many of shop-a's with the same settings (the control)
const INTERVAL_MS = 5_000; // what shop-b's (and the control's) applications ask: a read every 5 s
const WINDOW_MS = 60_000;
const BACKLOG_MS = (2 * FLOOD * 1_000) / CEILING; // until the flood's backlog has built
/** Each phase's budget: its fixed waits plus a generous allowance for a slow machine (docs/testing.md). */
const BUDGETS = {
  starts: Math.max(60_000, (FLOOD + 2 * FEW) * 1_000),
  backlog: BACKLOG_MS + 60_000,
  window: WINDOW_MS + 60_000,
};

/**
 * A fair share of the bank read ceiling (docs/merchant-api.md, "Budgets"). shop-a polls FLOOD applications at the 1 s
 * floor: FLOOD reads a second asked of a CEILING of 5, so the bank-reads queue always holds a backlog of shop-a's
 * polls, about FLOOD / CEILING seconds long. shop-b has FEW applications asking a read every 5 s. Every read carries
 * its merchant's fairness key (bankReadPriority): Temporal dispatches the backlog in turn by key, so shop-b's polls do
 * not queue behind shop-a's and shop-b is read at about its own interval.
 *
 * The control shows what the keys change: FEW more applications of shop-a with exactly shop-b's settings, on the same
 * queue at the same time. They share the flood's key, so they wait behind its backlog, as every application would
 * without fairness keys (one key, or none, is one first-come-first-served queue). Reads are counted from the bank's
 * own record of its API calls (the sandbox), over one window once the backlog has built: events, never timings.
 */
describe('fair share of the bank read ceiling between merchants (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      merchantApiKeys: [
        { name: 'shop-a', key: 'shop-a-key-0123456789abcdef0123' },
        { name: 'shop-b', key: 'shop-b-key-0123456789abcdef0123' },
      ],
      worker: { bankMaxReadsPerSecond: CEILING },
    });
  }, 120_000);
  afterAll(async () => stack?.close());

  it(
    `shop-b is read at about its own interval while shop-a's ${FLOOD} polls at the floor saturate the ceiling`,
    async () => {
      const phase = phases('fair-bank-reads');
      // Customers who have not acted yet: IN_PROGRESS for days, so every read is a poll that finds no change.
      stack.sandbox.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 10 * 86_400_000 }] });
      const run = randomUUID().slice(0, 8);
      const start = async (merchant: string, ref: string, fastPollIntervalMs: number) => {
        const started = await startFinanceApplication(
          stack.t.client,
          merchant,
          {
            merchantReference: ref,
            application: { redirectUrl: 'https://shop.example/back' },
            // The fast interval for the whole test: the responsive window outlasts it.
            settings: { fastPollIntervalMs, responsiveWindowMs: 3_600_000 },
          },
          { taskQueue: stack.t.taskQueue },
        );
        return started.financeApplicationId;
      };
      const fair: string[] = [];
      const control: string[] = [];
      const flood: string[] = [];
      await phase.run(`starts (${FLOOD + 2 * FEW} applications)`, BUDGETS.starts, async () => {
        for (let i = 0; i < FEW; i++) {
          fair.push(await start('shop-b', `fair-${run}-b-${i}`, INTERVAL_MS));
          control.push(await start('shop-a', `fair-${run}-control-${i}`, INTERVAL_MS));
        }
        await runPool(FLOOD, 16, async (i) => {
          flood.push(await start('shop-a', `fair-${run}-flood-${i}`, 1_000));
        });
      });

      // Until the flood's backlog has built (each of its polls waits about FLOOD / CEILING seconds), then one window.
      await phase.run('backlog builds', BUDGETS.backlog, () => new Promise((r) => setTimeout(r, BACKLOG_MS)));
      const from = new Date().toISOString();
      await phase.run('window', BUDGETS.window, () => new Promise((r) => setTimeout(r, WINDOW_MS)));
      const to = new Date().toISOString();

      const readsOf = new Map<string, number>();
      for (const call of stack.sandbox.control.apiCalls()) {
        if (call.route !== 'getStatus' || call.at < from || call.at >= to) continue;
        const id = call.path.split('/')[2]!;
        readsOf.set(id, (readsOf.get(id) ?? 0) + 1);
      }
      const perApplication = (ids: string[]) => ids.reduce((sum, id) => sum + (readsOf.get(id) ?? 0), 0) / ids.length;
      const asked = WINDOW_MS / INTERVAL_MS;
      const seen = {
        fair: perApplication(fair),
        control: perApplication(control),
        flood: perApplication(flood),
        total: [...readsOf.values()].reduce((a, b) => a + b, 0),
      };
      if (process.env.FAIR_READS_TEST_DEBUG) console.log('reads per application in the window', seen, { asked });

      // The scenario holds: the flood asks far more than the ceiling gives (each of its polls waits in the backlog).
      expect(seen.flood).toBeLessThan((WINDOW_MS / 1_000) * 0.5);
      // shop-b got at least half of what it asks, whatever shop-a asks.
      expect(seen.fair).toBeGreaterThanOrEqual(asked * 0.5);
      // The same settings under the flood's key did not: the fairness key is what kept shop-b out of the backlog.
      expect(seen.control).toBeLessThan(seen.fair / 2);

      // A run under the fairness keys (its polls' ActivityTaskScheduled carry the priority) for the replay test.
      recordFinanceHistory(
        await stack.t.client.workflow
          .getHandle(financeApplicationWorkflowId('shop-b', `fair-${run}-b-0`))
          .fetchHistory(),
        'fair-bank-reads',
      );
    },
    phasesTimeout(BUDGETS),
  );
});
