import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { startSandbox } from '../../src/sandbox';
import { DEFAULT_POLL_POLICY, pollSchedule } from '../../src/shared/poll-policy';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';
import { cpuSeconds, freePort, rssMiB, sleep, startChild, waitReady } from '../harness/processes';
import { report, runPool, summarize } from './stats';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ROOT = join(__dirname, '..', '..', '..');
const CMD = 'npm run bench -- open-applications';

/**
 * The cost of an open application (the target: 10,000 waiting applications on one worker). The production entry
 * points as separate processes (`node dist/worker.js` with its default sizing, `node dist/api/server.js`)
 * against a real dev server and the bank sandbox (in this process), which holds every application's status
 * and sends no webhook. Merchants create BENCH_OPEN_APPLICATIONS applications (default 10,000) through
 * `POST /applications`, 16 at a time; then the worker is left alone until every application is past its
 * responsive window, and its RSS, CPU and the bank's reads per application are measured over a window.
 */
export async function benchOpenApplications(): Promise<void> {
  const count = Number(process.env.BENCH_OPEN_APPLICATIONS ?? 10_000);
  // Policy: 5 min at 30 s, then ×2 up to 5 min: every application reads at the cap 12.5 min after creation.
  const settleMs = Number(process.env.BENCH_OPEN_SETTLE_MS ?? 13 * MINUTE);
  const windowMs = Number(process.env.BENCH_OPEN_WINDOW_MS ?? 3 * MINUTE);

  printPolicyFigures();

  const env = await TestWorkflowEnvironment.createLocal({ server: ephemeralDevServerOptions() });
  const sandbox = await startSandbox({
    clientId: 'bench-client',
    clientSecret: 'bench-secret',
    // Every application waits for its customer: CREATED, then IN_PROGRESS, held for days, no webhook yet.
    lifecycle: { stepMs: 1_000 },
    tokenTtlSeconds: 3_600,
  });
  sandbox.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 10 * 24 * HOUR }] });
  const [apiPort, internalPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const apiKey = `bench-merchant-key-${randomUUID()}`;
  const childEnv: Record<string, string> = {
    TEMPORAL_ADDRESS: env.address,
    TASK_QUEUE: `bench-open-${randomUUID().slice(0, 8)}`,
    BANK_BASE_URL: sandbox.url,
    BANK_AUTH_URL: sandbox.url,
    BANK_CLIENT_ID: 'bench-client',
    BANK_CLIENT_SECRET: 'bench-secret',
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
    WEBHOOK_HASH_SECRET: 'bench-webhook-hash-secret-0123456789abcdef',
    // One key for both processes (a real bank requires one): the API encrypts, the worker decrypts.
    PAYLOAD_ENCRYPTION_KEYS: `bench:${Buffer.alloc(32, 1).toString('base64')}`,
    PORT: String(apiPort),
    INTERNAL_PORT: String(internalPort),
    MERCHANT_API_KEYS: `bench:${apiKey}`,
    // 10,000 creations by one merchant in a few minutes by design: the creations budget is not what is measured here.
    MERCHANT_CREATIONS_PER_MINUTE: '1000000',
    // Required with a real bank; the bench decodes nothing through /codec.
    OPERATOR_API_KEYS: `bench-operator:operator-key-${randomUUID()}`,
    // The sandbox sends no account webhook in this bench.
    WEBHOOK_SECURITY_HEADER_WAIVED: 'true',
    LOG_LEVEL: 'warn',
  };
  const worker = startChild('worker', join(ROOT, 'dist', 'worker.js'), {
    ...childEnv,
    WORKER_METRICS_PORT: String(metricsPort),
  });
  const api = startChild('api', join(ROOT, 'dist', 'api', 'server.js'), childEnv);
  const rssSamples: number[] = [];
  const sampler = setInterval(() => rssSamples.push(rssMiB(worker.pid)), 1_000);
  try {
    await Promise.all([
      waitReady(worker, `http://127.0.0.1:${metricsPort}/readyz`),
      waitReady(api, `http://127.0.0.1:${internalPort}/readyz`),
    ]);

    // --- Creation through the facade, as merchants do.
    const statuses = new Map<number, number>();
    const t0 = performance.now();
    const latencies = await runPool(count, 16, async (i) => {
      const res = await fetch(`http://127.0.0.1:${internalPort}/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({
          merchantReference: `open-${i}-${childEnv.TASK_QUEUE}`,
          redirectUrl: 'https://shop.example/r',
        }),
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    });
    const createdAt = performance.now();
    const s = summarize(latencies);
    report('open applications: POST /applications (c=16)', {
      n: count,
      perSec: (count / (createdAt - t0)) * 1000,
      p50ms: s.p50,
      p99ms: s.p99,
      answered503: statuses.get(503) ?? 0,
      other: [...statuses].filter(([code]) => code !== 201 && code !== 503).length,
      target: '0 answered 503',
      cmd: CMD,
    });

    // --- Steady state: every application past its responsive window, polling at the cap.
    await sleep(Math.max(0, settleMs - (performance.now() - createdAt)));
    const readsBefore = countReads(sandbox.control.apiCalls());
    const cpuBefore = cpuSeconds(worker.pid);
    const wallBefore = performance.now();
    const rssBefore = rssSamples.length;
    await sleep(windowMs);
    const wall = (performance.now() - wallBefore) / 1000;
    const cpu = (cpuSeconds(worker.pid) - cpuBefore) / wall;
    const reads = countReads(sandbox.control.apiCalls()) - readsBefore;
    const steadyRss = rssSamples.slice(rssBefore);
    report(`open applications: worker at steady state (${count})`, {
      rssMiB: Math.max(...steadyRss),
      maxRssWholeRunMiB: Math.max(...rssSamples),
      cpuPctOfCore: cpu * 100,
      target: 'RSS ≤ 1024 MiB, CPU ≤ 25 %',
      before: '500 apps: 467 MiB, 16 %; 1,500: 910 MiB, 48 %',
      cmd: CMD,
    });
    report('open applications: bank reads (no webhook yet)', {
      readsPerSec: reads / wall,
      perAppPerHour: (reads / wall / count) * 3_600,
      target: '≤ 12 with no webhook ever',
      before: 120,
      cmd: CMD,
    });
  } catch (err) {
    for (const child of [worker, api]) if (child.tail()) process.stderr.write(`${child.tail()}\n`);
    throw err;
  } finally {
    clearInterval(sampler);
    await Promise.all([api.stop(), worker.stop()]);
    await sandbox.close();
    await env.teardown();
  }
}

/** The policy's own figures (src/shared/poll-policy.ts): reads an hour of a quiet application, per phase. */
function printPolicyFigures(): void {
  for (const webhooks of [false, true]) {
    const at = pollSchedule(DEFAULT_POLL_POLICY, 48 * HOUR, webhooks);
    const between = (from: number, to: number) => at.filter((t) => t >= from && t < to).length;
    let worstFrom10Min = 0;
    for (let from = 10 * MINUTE; from < 46 * HOUR; from += MINUTE) {
      worstFrom10Min = Math.max(worstFrom10Min, between(from, from + HOUR));
    }
    report(`poll policy: reads/h per quiet application${webhooks ? ' (webhooks known)' : ' (no webhook ever)'}`, {
      first10Min: between(0, 10 * MINUTE),
      worstHourFrom10Min: worstFrom10Min,
      afterFirstHour: between(24 * HOUR, 25 * HOUR),
      perDay: between(24 * HOUR, 48 * HOUR),
      target: `≤ 20 from 10 min; ≤ ${webhooks ? 4 : 12} after the first hour`,
      before: 120,
      cmd: 'npm run bench -- open-applications (test: test/shared/poll-policy.test.ts)',
    });
  }
}

function countReads(calls: { route: string }[]): number {
  let n = 0;
  for (const c of calls) if (c.route === 'getStatus') n++;
  return n;
}
