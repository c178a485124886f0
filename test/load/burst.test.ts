import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { startFinanceApplication } from '../../src/client/finance-applications';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { runPool } from '../../tools/bench/stats';
import { rssMiB } from '../../tools/harness/processes';
import { sharedBuild } from '../helpers/build';
import { TEST_MERCHANT } from '../helpers/merchants';
import { phases, phasesTimeout } from '../helpers/phases';
import {
  connectTestTemporal,
  eventually,
  TEST_PAYLOAD_ENCRYPTION_KEYS,
  type TemporalTestContext,
} from '../helpers/temporal';

const APPLICATIONS = Number(process.env.BURST_TEST_APPS ?? 1_000);
const WINDOW_MS = Number(process.env.BURST_TEST_WINDOW_MS ?? 10_000);
const HEAP_MIB = Number(process.env.BURST_TEST_HEAP_MIB ?? 256);
// Hang detectors, not timings (docs/testing.md): a few times what a loaded 2-core machine took.
const BUDGETS = { worker: 60_000, burst: 120_000, created: 300_000 };

/**
 * A campaign's burst on a worker whose heap is capped: APPLICATIONS finance applications started within WINDOW_MS
 * (paced, as a merchant's traffic comes) on the production worker (`dist/worker.js`) run with
 * `--max-old-space-size=HEAP_MIB`, which sizes its workflow cache from that cap (src/worker/sizing.ts). The worker
 * never exits, and every application is created at the bank (the sandbox's own record). Printed, not asserted: the
 * worker's peak RSS, how long until the bank had them all, and the sticky cache's hit rate. The full burst (10,000
 * in 60 s, heap 768 MiB) is the same test with BURST_TEST_APPS=10000 BURST_TEST_WINDOW_MS=60000
 * BURST_TEST_HEAP_MIB=768 (docs/benchmarks.md).
 */
describe(`a burst of ${APPLICATIONS} applications in ${WINDOW_MS / 1000} s on a worker capped at ${HEAP_MIB} MiB of heap`, () => {
  let t: TemporalTestContext;
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    t = await connectTestTemporal();
    // Statuses stay where creation puts them: the burst is about creating.
    sandbox = await startSandbox({
      clientId: 'burst',
      clientSecret: 'burst-secret',
      lifecycle: { stepMs: 86_400_000 },
    });
  }, 120_000);
  afterAll(async () => {
    await sandbox?.close();
    await t?.close();
  });

  it(
    'creates every application at the bank, and the worker never exits',
    async () => {
      const phase = phases('burst');
      const dist = await sharedBuild();
      let output = '';
      const worker = spawn(process.execPath, [`--max-old-space-size=${HEAP_MIB}`, join(dist, 'worker.js')], {
        env: {
          PATH: process.env.PATH ?? '',
          TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS!,
          TASK_QUEUE: t.taskQueue,
          // A Worker Deployment of its own: on the shared server another test's build may be current in the default.
          WORKER_DEPLOYMENT_NAME: `burst-${t.taskQueue}`,
          BANK_BASE_URL: sandbox.url,
          BANK_AUTH_URL: sandbox.url,
          BANK_CLIENT_ID: 'burst',
          BANK_CLIENT_SECRET: 'burst-secret',
          PUBLIC_BASE_URL: 'http://127.0.0.1:9',
          WEBHOOK_HASH_SECRET: 'burst-webhook-hash-secret-0123456789abcdef',
          PAYLOAD_ENCRYPTION_KEYS: TEST_PAYLOAD_ENCRYPTION_KEYS,
          WORKER_METRICS_PORT: '0',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      worker.stdout.on('data', (d: Buffer) => (output += d.toString()));
      worker.stderr.on('data', (d: Buffer) => (output += d.toString()));
      let exited: number | null | undefined;
      worker.once('exit', (code) => (exited = code));
      let peakMiB = 0;
      const sampler = setInterval(() => {
        if (exited === undefined) peakMiB = Math.max(peakMiB, rssMiB(worker.pid!));
      }, 200);
      try {
        const running = await phase.run('worker starts', BUDGETS.worker, () =>
          eventually(() => {
            if (exited !== undefined) throw new Error(`the worker exited (${exited}): ${output.slice(-3000)}`);
            const line = output.split('\n').find((l) => l.includes('"msg":"workers running"'));
            return Promise.resolve(line ? (JSON.parse(line) as Record<string, unknown>) : undefined);
          }, BUDGETS.worker),
        );
        // The cap sized the cache: not the default 500 nor the SDK's count from a large heap.
        expect(running).toMatchObject({ memoryLimit: { from: '--max-old-space-size', bytes: HEAP_MIB * 2 ** 20 } });
        const cache = running.maxCachedWorkflows as number;
        expect(running.cacheSizedBy).toEqual(expect.stringContaining('--max-old-space-size'));

        const run = randomUUID().slice(0, 8);
        const started = Date.now();
        const startedIds = new Set<string>();
        await phase.run(`burst (${APPLICATIONS} starts, paced over ${WINDOW_MS / 1000} s)`, BUDGETS.burst, () =>
          runPool(APPLICATIONS, 32, async (i) => {
            // Paced: the i-th start no earlier than its share of the window.
            const due = started + (i * WINDOW_MS) / APPLICATIONS - Date.now();
            if (due > 0) await new Promise((r) => setTimeout(r, due));
            const { workflowId } = await startFinanceApplication(
              t.client,
              TEST_MERCHANT,
              // Each its own redirectUrl: the bank's record of the create names it.
              {
                merchantReference: `burst-${run}-${i}`,
                application: { redirectUrl: `https://shop.example/back/${run}/${i}` },
              },
              { taskQueue: t.taskQueue },
            );
            startedIds.add(workflowId);
          }),
        );
        const burstMs = Date.now() - started;
        expect(startedIds.size).toBe(APPLICATIONS);

        const createdAtBank = () =>
          new Set(
            sandbox.control
              .applications()
              .map((a) => a.createRequest.redirectUrl)
              .filter(
                (url): url is string => typeof url === 'string' && url.startsWith(`https://shop.example/back/${run}/`),
              ),
          );
        await phase.run('every application created at the bank', BUDGETS.created, () =>
          eventually(
            () => {
              if (exited !== undefined) throw new Error(`the worker exited (${exited}): ${output.slice(-3000)}`);
              return Promise.resolve(createdAtBank().size === APPLICATIONS ? true : undefined);
            },
            BUDGETS.created,
            500,
          ),
        );
        const allCreatedMs = Date.now() - started;
        expect(createdAtBank().size).toBe(APPLICATIONS);
        expect(exited).toBeUndefined();

        const metricsPort = running.workerMetricsPort as number;
        const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        const total = (name: string) =>
          scrape
            .split('\n')
            .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
            .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
        const hits = total('temporal_sticky_cache_hit_total');
        const misses = total('temporal_sticky_cache_miss_total');
        process.stderr.write(
          `[burst] ${APPLICATIONS} applications, heap cap ${HEAP_MIB} MiB, cache ${cache}: started in ` +
            `${(burstMs / 1000).toFixed(1)} s, all created at the bank after ${(allCreatedMs / 1000).toFixed(1)} s; ` +
            `worker peak RSS ${Math.round(peakMiB)} MiB; sticky cache hits ${hits}, misses ${misses} ` +
            `(hit rate ${hits + misses > 0 ? ((100 * hits) / (hits + misses)).toFixed(1) : '-'} %)\n`,
        );
        expect(hits + misses).toBeGreaterThan(0);
      } finally {
        clearInterval(sampler);
        if (exited === undefined) {
          const gone = new Promise((r) => worker.once('exit', r));
          worker.kill('SIGTERM');
          await gone;
        }
      }
    },
    phasesTimeout(BUDGETS),
  );
});
