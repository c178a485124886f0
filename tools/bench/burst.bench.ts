import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Facade } from '../chaos/merchant';
import {
  cpuSeconds,
  freePort,
  ManagedProcess,
  rssMiB,
  sandboxCall,
  sleep,
  waitForHttp,
  waitForTemporal,
} from '../harness/processes';
import { apiProcess, baseEnv, sandboxProcess, serviceEnv } from '../harness/service-processes';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from '../../src/temporal/binaries';
import { devServerArgs } from '../../src/temporal/dev-server-process';
import type { ApplicationRecord } from '../../src/sandbox/types';
import { runPool } from './stats';

const COMMAND = 'npm run bench -- burst';
const DAY = 86_400_000;

/**
 * A merchant's campaign on a worker whose heap is capped: BENCH_BURST_APPS (10,000) applications started through the
 * merchant facade within BENCH_BURST_WINDOW_S (60 s), paced, on the production worker (`node
 * --max-old-space-size=BENCH_BURST_HEAP_MIB dist/worker.js`, 768), which sizes its workflow cache from that cap
 * (src/worker/sizing.ts). Every process is the production entry point: the Temporal dev server, the bank sandbox, one
 * API process and the worker, supervised (a worker that exits is restarted and counted).
 * Printed beside their targets: the worker's exits and restarts (0), applications created at the bank (all, from the
 * sandbox's own record), the facade's answers (no 500; 503 with Retry-After allowed, then retried as a merchant
 * would), the worker's peak RSS, the time until the bank had every application, and the sticky cache's hit rate.
 * The smaller burst (1,000 in 10 s, heap 256 MiB) is test/load/burst.test.ts in `npm run test:load`.
 */
export async function benchBurst(): Promise<void> {
  const apps = Number(process.env.BENCH_BURST_APPS ?? 10_000);
  const windowMs = Number(process.env.BENCH_BURST_WINDOW_S ?? 60) * 1000;
  const heapMiB = Number(process.env.BENCH_BURST_HEAP_MIB ?? 768);
  // Requests in flight at most: a campaign's merchant does not wait for one answer before sending the next.
  const concurrency = Number(process.env.BENCH_BURST_CONCURRENCY ?? 128);
  const root = projectRoot();
  const runDir = join(root, 'data', 'bench', `burst-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(runDir, { recursive: true });
  const place = { root, log: (name: string) => join(runDir, `${name}.log`) };
  const cli = findTemporalCli();
  if (!cli) throw new Error(MISSING_BINARY_HELP);
  const out = (line: string) => process.stdout.write(`burst: ${line}\n`);
  out(
    `${apps} applications offered in ${windowMs / 1000} s (at most ${concurrency} in flight), worker heap capped at ` +
      `${heapMiB} MiB; logs in ${runDir}`,
  );

  const ports = {
    temporal: await freePort(),
    ui: await freePort(),
    sandbox: await freePort(),
    api: { public: await freePort(), internal: await freePort() },
    workerMetrics: await freePort(),
  };
  const temporalAddress = `127.0.0.1:${ports.temporal}`;
  const sandboxUrl = `http://127.0.0.1:${ports.sandbox}`;
  const publicUrl = `http://127.0.0.1:${ports.api.public}`;
  const secrets = {
    hash: randomBytes(32).toString('base64url'),
    apiKey: randomBytes(24).toString('base64url'),
    header: `Burst ${randomBytes(18).toString('hex')}`,
    signing: `whsec_${randomBytes(32).toString('base64')}`,
    payloadKeys: `burst-1:${randomBytes(32).toString('base64')}`,
  };
  const temporal = new ManagedProcess(
    'temporal',
    cli,
    // In memory: the burst is about the worker; a SQLite file would be the bottleneck first.
    devServerArgs({
      port: ports.temporal,
      uiPort: ports.ui,
      namespace: 'default',
    }),
    baseEnv(),
    place.log('temporal'),
    root,
  );
  const sandbox = sandboxProcess(place, {
    port: ports.sandbox,
    accountWebhookUrl: `${publicUrl}/webhooks/accounts`,
    securityHeader: secrets.header,
    client: { id: 'sandbox-client', secret: 'sandbox-secret' },
  });
  const env = serviceEnv({
    temporalAddress,
    namespace: 'default',
    taskQueue: 'paylater',
    sandboxUrl,
    secrets,
    merchant: 'burst',
    operatorKey: `burst-operator:${randomBytes(24).toString('base64url')}`,
    callbacks: { origin: 'https://shop.example', transactionsUrl: 'https://shop.example/transactions' },
  });
  // A campaign merchant's creations budget raised to the campaign (MERCHANT_CREATIONS_PER_MINUTE, default 600).
  const api = apiProcess(
    place,
    'api',
    { ...env, MERCHANT_CREATIONS_PER_MINUTE: String(Math.max(600, Math.ceil((apps * 60_000) / windowMs) * 2)) },
    ports.api,
    publicUrl,
  );
  const worker = new ManagedProcess(
    'worker',
    process.execPath,
    [`--max-old-space-size=${heapMiB}`, 'dist/worker.js'],
    { ...env, PUBLIC_BASE_URL: publicUrl, WORKER_METRICS_PORT: String(ports.workerMetrics) },
    place.log('worker'),
    root,
  );
  const all = [worker, api, sandbox, temporal];
  let peakMiB = 0;
  const sampler = setInterval(() => {
    if (worker.pid !== undefined && worker.running) peakMiB = Math.max(peakMiB, rssMiB(worker.pid));
  }, 250);
  try {
    temporal.start();
    sandbox.start();
    await waitForTemporal(temporalAddress, 90_000);
    await waitForHttp(`${sandboxUrl}/_sandbox/token-requests`, 30_000);
    // Statuses stay where creation puts them: the burst is about creating.
    await sandboxCall(sandboxUrl, 'POST', '/_sandbox/application-scripts', {
      script: { steps: [{ status: 'IN_PROGRESS', afterMs: DAY }] },
    });
    api.start();
    worker.start();
    await waitForHttp(`http://127.0.0.1:${ports.api.internal}/readyz`, 90_000);
    await waitForHttp(`http://127.0.0.1:${ports.workerMetrics}/readyz`, 90_000);
    const facade = new Facade([`http://127.0.0.1:${ports.api.internal}`], secrets.apiKey);
    const tag = randomBytes(3).toString('hex');
    // The first application waits until the worker's build is current (the worker makes the first build current).
    const first = await facade.startWithRetry(
      0,
      '/applications',
      { merchantReference: `burst-${tag}-warm`, redirectUrl: 'https://shop.example/back' },
      120_000,
    );
    if (first.status !== 201 && first.status !== 200) throw new Error(`the first start answered ${first.status}`);
    const answers = new Map<string, number>();
    const count = (key: string) => answers.set(key, (answers.get(key) ?? 0) + 1);
    let retryAfterMissing = 0;
    const cpuEach = () => [api, worker, temporal].map((p) => (p.pid ? cpuSeconds(p.pid) : 0));
    const cpuOf = () => cpuEach().reduce((sum, v) => sum + v, 0);
    const eachBefore = cpuEach();
    const cpuBefore = cpuOf();
    const started = Date.now();
    const progress = setInterval(
      () => out(`  ${answers.get('201') ?? 0} started after ${secs(Date.now() - started)}`),
      10_000,
    );
    try {
      await runPool(apps, concurrency, async (i) => {
        const due = started + (i * windowMs) / apps - Date.now();
        if (due > 0) await sleep(due);
        // As a merchant retries: 503 after Retry-After, no answer at once; the reference makes it idempotent.
        for (;;) {
          const res = await facade.request(i, 'POST', '/applications', {
            merchantReference: `burst-${tag}-${i}`,
            redirectUrl: `https://shop.example/back/${tag}/${i}`,
          });
          count(String(res.status ?? 'none'));
          // 503 (Temporal busy) and 429 (a budget) say when to come back: a merchant waits that long.
          if (res.status === 503 || res.status === 429) {
            if (res.retryAfter === undefined) retryAfterMissing += 1;
            await sleep(Math.min(5_000, (res.retryAfter ?? 1) * 1_000));
            continue;
          }
          if (res.status === null) continue;
          return;
        }
      });
    } finally {
      clearInterval(progress);
    }
    const startedMs = Date.now() - started;
    out(`  every start answered after ${secs(startedMs)}`);
    const atBank = async () =>
      (await sandboxCall<ApplicationRecord[]>(sandboxUrl, 'GET', '/_sandbox/applications')).filter((a) =>
        a.createRequest.redirectUrl?.startsWith(`https://shop.example/back/${tag}/`),
      ).length;
    let created = 0;
    const bound = Date.now() + 30 * 60_000;
    while ((created = await atBank()) < apps && Date.now() < bound) {
      out(`  ${created} created at the bank after ${secs(Date.now() - started)}`);
      await sleep(5_000);
    }
    const allCreatedMs = Date.now() - started;
    // What the burst cost the machine: the CPU time of the API, the worker and the Temporal server per creation, and
    // so how many cores creating `apps` within the window takes at the least.
    const cpuPerCreation = (cpuOf() - cpuBefore) / Math.max(1, created);
    const perProcess = cpuEach().map((v, i) => ((v - eachBefore[i]!) * 1000) / Math.max(1, created));
    const scrape = await (await fetch(`http://127.0.0.1:${ports.workerMetrics}/metrics`)).text();
    const total = (name: string) =>
      scrape
        .split('\n')
        .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
        .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
    const hits = total('temporal_sticky_cache_hit_total');
    const misses = total('temporal_sticky_cache_miss_total');
    const restarts = worker.unexpectedExits.length;
    const rows: [string, string, string][] = [
      ['worker exits / restarts', `${restarts} / ${worker.starts - 1}`, '0 / 0'],
      ['applications created at the bank', `${created} of ${apps}`, `all ${apps}`],
      [
        'facade answers (every attempt)',
        [...answers.entries()].map(([status, n]) => `${n}×${status}`).join(', '),
        '0×500; 503 only with Retry-After',
      ],
      ['503 or 429 without Retry-After', String(retryAfterMissing), '0'],
      ['all started through the facade after', secs(startedMs), `≈ ${windowMs / 1000} s (the window)`],
      ['all created at the bank after', secs(allCreatedMs), 'no target: lower is better'],
      [
        'CPU per creation (API + worker + Temporal)',
        `${(cpuPerCreation * 1000).toFixed(1)} ms: ${apps} in ${windowMs / 1000} s take ≥ ` +
          `${((cpuPerCreation * apps) / (windowMs / 1000)).toFixed(1)} cores (this machine: ${availableParallelism()}); ` +
          `API ${perProcess[0]!.toFixed(1)}, worker ${perProcess[1]!.toFixed(1)}, Temporal ${perProcess[2]!.toFixed(1)} ms`,
        'no target',
      ],
      ['worker peak RSS', `${Math.round(peakMiB)} MiB`, `no exit at a ${heapMiB} MiB heap cap`],
      [
        'sticky cache hit rate',
        `${hits + misses > 0 ? ((100 * hits) / (hits + misses)).toFixed(1) : '-'} % (${hits} hits, ${misses} misses)`,
        'no target',
      ],
    ];
    const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const row of rows) {
      process.stdout.write(`${row.map((c, i) => c.padEnd(widths[i]!)).join('  ')}  ${COMMAND}\n`);
    }
  } finally {
    clearInterval(sampler);
    for (const p of all) await p.stop();
  }
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
