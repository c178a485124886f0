import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { financeApplicationHandle, startFinanceApplication } from '../../src/client';
import { startSandbox } from '../../src/sandbox';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';
import { TEST_PAYLOAD_ENCRYPTION_KEYS, testDataConverter } from '../harness/temporal-fixtures';
import { freePort, rssMiB, startChild, waitReady } from '../harness/processes';
import { CACHED_WORKFLOW_BYTES } from '../../src/worker/sizing';
import { report, runPool } from './stats';

const root = join(__dirname, '..', '..', '..');
const DAY = 24 * 60 * 60_000;
/** The merchant the applications belong to (the worker, without MERCHANT_API_KEYS, serves any with the globals). */
const MERCHANT = 'bench';

/**
 * The production worker process (`node dist/worker.js`, prebuilt bundle) holding many open, mostly idle finance
 * applications: its RSS once N applications are created (each waits on a long poll timer), and while every one of
 * them wakes at once on a webhook signal, so the applications evicted from the workflow cache are replayed. Run per
 * workflow cache size: the default (500), 1,000, and the SDK's default on this machine's heap. Not part of the default
 * `npm run bench` (minutes): `npm run bench -- worker-memory`; BENCH_APPLICATIONS and BENCH_CACHES change it.
 */
export async function benchWorkerMemory(): Promise<void> {
  const n = Number(process.env.BENCH_APPLICATIONS ?? 10_000);
  const heapMiB = Number(execFileSync(process.execPath, ['-p', 'v8.getHeapStatistics().heap_size_limit / 1048576']));
  const sdkDefault = Math.max(Math.floor(((heapMiB - 200) * 600) / 1024), 10);
  const caches = (process.env.BENCH_CACHES ?? `500,1000,${sdkDefault}`).split(',').map(Number);
  // The workers run the production entry point: build it as `npm run worker` would.
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });

  // The bench's client encrypts with the keys the worker processes are given.
  const env = await TestWorkflowEnvironment.createLocal({
    server: ephemeralDevServerOptions(),
    client: { dataConverter: testDataConverter },
  });
  // Statuses never move on their own: the applications wait, as most do for days.
  const sandbox = await startSandbox({ clientId: 'bench', clientSecret: 'bench-secret', lifecycle: { stepMs: DAY } });
  const { client } = env;
  const settled: { cache: number; startSettledMiB: number; wakePeakMiB: number }[] = [];
  try {
    for (const cache of caches) {
      const taskQueue = `bench-memory-${cache}-${randomUUID().slice(0, 8)}`;
      const metricsPort = await freePort();
      const child = startChild('worker', join(root, 'dist', 'worker.js'), {
        TEMPORAL_ADDRESS: env.address,
        TASK_QUEUE: taskQueue,
        BANK_BASE_URL: sandbox.url,
        BANK_AUTH_URL: sandbox.url,
        BANK_CLIENT_ID: 'bench',
        BANK_CLIENT_SECRET: 'bench-secret',
        PUBLIC_BASE_URL: 'http://127.0.0.1:9',
        WEBHOOK_HASH_SECRET: 'bench-webhook-hash-secret-0123456789abcdef',
        PAYLOAD_ENCRYPTION_KEYS: TEST_PAYLOAD_ENCRYPTION_KEYS,
        WORKER_MAX_CACHED_WORKFLOWS: String(cache),
        WORKER_METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'warn',
      });
      let peak = 0;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(child.pid))), 250);
      try {
        await waitReady(child, `http://127.0.0.1:${metricsPort}/readyz`);
        const idle = rssMiB(child.pid);

        const t0 = performance.now();
        const ids: string[] = new Array<string>(n);
        const refs = Array.from({ length: n }, (_, i) => `bench-mem-${cache}-${i}-${randomUUID().slice(0, 8)}`);
        await runPool(n, 32, async (i) => {
          const started = await startFinanceApplication(
            client,
            MERCHANT,
            {
              merchantReference: refs[i]!,
              application: { redirectUrl: 'https://shop.example/return' },
              settings: { fastPollIntervalMs: DAY, slowPollIntervalMs: DAY },
            },
            { taskQueue },
          );
          ids[i] = started.financeApplicationId;
        });
        const startS = (performance.now() - t0) / 1000;
        await new Promise((r) => setTimeout(r, 5_000));
        const afterStart = { peak, settled: rssMiB(child.pid) };

        // Every application wakes once (a webhook): reads for all, replays for those no longer cached.
        peak = 0;
        const readsBefore = sandbox.control.apiCalls().filter((c) => c.route === 'getStatus').length;
        const t1 = performance.now();
        await runPool(n, 32, async (i) => {
          await financeApplicationHandle(client, MERCHANT, refs[i]!).signal(financeApplicationStatusChangedSignal, {
            financeApplicationId: ids[i]!,
          });
        });
        const deadline = Date.now() + 10 * 60_000;
        while (
          sandbox.control.apiCalls().filter((c) => c.route === 'getStatus').length - readsBefore < n &&
          Date.now() < deadline
        ) {
          await new Promise((r) => setTimeout(r, 1_000));
        }
        const wakeS = (performance.now() - t1) / 1000;
        await new Promise((r) => setTimeout(r, 5_000));
        settled.push({ cache: Math.min(cache, n), startSettledMiB: afterStart.settled, wakePeakMiB: peak });
        report(`worker RSS, ${n} open applications, maxCachedWorkflows=${cache}`, {
          idleMiB: idle,
          startPeakMiB: afterStart.peak,
          startSettledMiB: afterStart.settled,
          wakePeakMiB: peak,
          wakeSettledMiB: rssMiB(child.pid),
          startS,
          wakeS,
        });
      } catch (err) {
        if (child.tail()) process.stderr.write(`${child.tail()}\n`);
        throw err;
      } finally {
        clearInterval(sampler);
        await child.stop();
      }
    }
    // What one cached finance application costs: the RSS between two cache sizes over the workflows between them.
    settled.sort((a, b) => a.cache - b.cache);
    for (let i = 1; i < settled.length; i++) {
      const [a, b] = [settled[i - 1]!, settled[i]!];
      if (b.cache === a.cache) continue;
      const perCached = (x: number, y: number) => Math.round(((y - x) * 1024) / (b.cache - a.cache));
      report(`RSS per cached finance application, cache ${a.cache} → ${b.cache}`, {
        settledKiB: perCached(a.startSettledMiB, b.startSettledMiB),
        wakePeakKiB: perCached(a.wakePeakMiB, b.wakePeakMiB),
        sizingAssumesKiB: CACHED_WORKFLOW_BYTES / 1024,
      });
    }
  } finally {
    await sandbox.close();
    await env.teardown();
  }
}
