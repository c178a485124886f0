import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Facade, startMerchantEndpoint, type MerchantEndpoint } from '../chaos/merchant';
import { seededRng, type Rng } from '../chaos/prng';
import { compareApplications, type Finding, type OurApplication } from '../chaos/truth';
import { startTemporalCluster, type ClusterProcesses } from '../cluster/temporal-cluster';
import { clusterToolchain } from '../cluster/temporal-server';
import {
  cpuSeconds,
  freePort,
  machineCpu,
  ManagedProcess,
  rssMiB,
  sandboxCall,
  sleep,
  waitForHttp,
} from '../harness/processes';
import { apiProcess, sandboxProcess, serviceEnv, workerProcess } from '../harness/service-processes';
import type { ApiCallRecord, ApplicationRecord, ApplicationScript } from '../../src/sandbox/types';
import { createPayloadCodec, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { getFinanceApplication } from '../../src/client/finance-applications';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from '../../src/temporal/binaries';
import { createDataConverter } from '../../src/temporal/data-converter';
import { runPool, summarize } from './stats';

const COMMAND = 'npm run bench -- scale-out';
const NAMESPACE = 'default';
const MERCHANTS = ['alpha', 'beta'] as const;
/** Script variants the applications are spread over (the sandbox matches a script by scanning its rules). */
const VARIANTS = 40;
/** BENCH_SCALE_OUT_APPS's default: the issue's 50,000. */
const DEFAULT_APPS = 50_000;

const int = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1`);
  return value;
};

/**
 * The scale-out soak: the Temporal server split into its services (frontend, two history processes on 512 shards,
 * matching, worker) on PostgreSQL, BENCH_SCALE_OUT_WORKERS (4) worker processes and BENCH_SCALE_OUT_APIS (2) API
 * processes, the bank sandbox. BENCH_SCALE_OUT_APPS (50,000) applications from two merchants with equal load are
 * offered at BENCH_SCALE_OUT_RATE a second (20) through the facade; the bank's webhooks arrive shuffled (a random
 * delay each), duplicated (one to three copies) and 10 % dropped, so polling must find those. One history process is
 * SIGKILLed at 40 % of the load and started again 10 s later; one worker at 60 %, started again 5 s later.
 * Then every application is compared with the bank sandbox's truth (tools/chaos/truth.ts): lost and wrong must be 0.
 * Printed at the end: per-worker RSS and CPU, bank reads per application-hour and per merchant (the sandbox's own
 * count, against BANK_MAX_READS_PER_SECOND = BENCH_SCALE_OUT_READS), state transitions a second (the history
 * services' metrics), webhook-to-status latency, and every facade answer (0 × 500). A bench, never in CI: at the
 * defaults it runs for hours; progress is printed every 30 s. Logs in data/bench/scale-out-<time>/.
 */
export async function benchScaleOut(): Promise<void> {
  const apps = int('BENCH_SCALE_OUT_APPS', DEFAULT_APPS);
  const rate = int('BENCH_SCALE_OUT_RATE', 20);
  const workerCount = int('BENCH_SCALE_OUT_WORKERS', 4);
  const apiCount = int('BENCH_SCALE_OUT_APIS', 2);
  const readsPerSecond = int('BENCH_SCALE_OUT_READS', 100);
  const seed = int('BENCH_SCALE_OUT_SEED', 1);
  const root = projectRoot();
  const runDir = join(root, 'data', 'bench', `scale-out-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(runDir, { recursive: true });
  const logOf = (name: string) => join(runDir, `${name}.log`);
  const t0 = Date.now();
  const out = (line: string) => process.stdout.write(`scale-out [${secs(Date.now() - t0)}] ${line}\n`);
  const cli = findTemporalCli();
  if (!cli) throw new Error(MISSING_BINARY_HELP);
  out(
    `${apps} applications at ${rate}/s from ${MERCHANTS.length} merchants; ${workerCount} workers, ${apiCount} APIs, ` +
      `split cluster; BANK_MAX_READS_PER_SECOND ${readsPerSecond}; logs in ${runDir}`,
  );

  const cluster: ClusterProcesses = { servers: [] };
  const processes: ManagedProcess[] = [];
  const endpoints: MerchantEndpoint[] = [];
  let connection: Connection | undefined;
  const stopAll = async () => {
    await connection?.close().catch(() => undefined);
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all(endpoints.map((e) => e.close()));
    await Promise.all(cluster.servers.map((p) => p.stop()));
    await cluster.postgres?.stop();
  };
  // Ctrl-C or SIGTERM stops every process and removes the temp PostgreSQL (the SDK's Runtime would keep this alive).
  const onSignal = (signal: NodeJS.Signals) => {
    out(`${signal}: stopping`);
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    const tools = clusterToolchain(root);
    const temporal = await startTemporalCluster({
      ...{ root, tools, cli, topology: 'split', port: freePort, logOf, runDir, namespace: NAMESPACE },
      into: cluster,
      metrics: true,
    });
    out(`Temporal ${tools.version} split on PostgreSQL at ${temporal.address}`);
    connection = await Connection.connect({ address: temporal.address });
    // Each merchant its own callback endpoint: an origin belongs to one merchant (docs/merchant-api.md, Merchants).
    for (const _ of MERCHANTS) endpoints.push(await startMerchantEndpoint());
    const endpointOf = Object.fromEntries(MERCHANTS.map((m, i) => [m, endpoints[i]!]));
    const merchantsFile = join(runDir, 'merchants.json');
    writeFileSync(
      merchantsFile,
      JSON.stringify({
        merchants: Object.fromEntries(
          MERCHANTS.map((m) => [
            m,
            {
              callbackAllowedOrigins: [endpointOf[m]!.origin],
              transactionsCallbackUrl: endpointOf[m]!.transactionsUrl,
              // The harness reads every application back at the end: no budget of a merchant stops it.
              requestsPerMinute: 600_000,
              creationsPerMinute: 600_000,
              maxOpenApplications: 100_000,
            },
          ]),
        ),
      }),
    );

    const keys = Object.fromEntries(MERCHANTS.map((m) => [m, randomBytes(24).toString('base64url')]));
    const secrets = {
      hash: randomBytes(32).toString('base64url'),
      apiKey: keys[MERCHANTS[0]]!,
      header: `ScaleOut ${randomBytes(18).toString('hex')}`,
      signing: `whsec_${randomBytes(32).toString('base64')}`,
      payloadKeys: `scale-1:${randomBytes(32).toString('base64')}`,
    };
    const sandboxUrl = `http://127.0.0.1:${await freePort()}`;
    const apiPorts = await Promise.all(
      Array.from({ length: apiCount }, async () => ({ public: await freePort(), internal: await freePort() })),
    );
    const publicUrls = apiPorts.map((p) => `http://127.0.0.1:${p.public}`);
    const internalUrls = apiPorts.map((p) => `http://127.0.0.1:${p.internal}`);
    const place = { root, log: logOf };
    const sandbox = sandboxProcess(place, {
      port: Number(new URL(sandboxUrl).port),
      client: { id: 'sandbox-client', secret: 'sandbox-secret' },
      accountWebhookUrl: `${publicUrls[0]}/webhooks/accounts`,
      securityHeader: secrets.header,
      logLevel: 'warn',
    });
    const env = {
      ...serviceEnv({
        temporalAddress: temporal.address,
        namespace: NAMESPACE,
        taskQueue: 'paylater',
        sandboxUrl,
        secrets,
        merchant: MERCHANTS[0],
        operatorKey: `scale-operator:${randomBytes(24).toString('base64url')}`,
        callbacks: { origin: '', transactionsUrl: '' },
      }),
      CALLBACK_ALLOWED_ORIGINS: '',
      TRANSACTIONS_CALLBACK_URL: '',
      CALLBACK_SIGNING_SECRETS: '',
      CALLBACK_SIGNING_MASTER_SECRETS: randomBytes(32).toString('base64url'),
      MERCHANTS_FILE: merchantsFile,
      // Two API processes: the audit trail in PostgreSQL (a file takes one writer), the cluster's own database.
      AUDIT_LOG: `postgres://${cluster.postgres!.user}:${encodeURIComponent(cluster.postgres!.password)}@${cluster.postgres!.host}:${cluster.postgres!.port}/temporal`,
      MERCHANT_API_KEYS: MERCHANTS.map((m) => `${m}:${keys[m]}`).join(','),
      BANK_MAX_READS_PER_SECOND: String(readsPerSecond),
      LOG_LEVEL: 'warn',
    };
    const apis = apiPorts.map((p, i) => apiProcess(place, `api-${i + 1}`, env, p, publicUrls[i]!));
    const workerMetrics: number[] = [];
    const workers: ManagedProcess[] = [];
    for (let i = 0; i < workerCount; i++) {
      workerMetrics.push(await freePort());
      workers.push(
        workerProcess(place, `worker-${i + 1}`, {
          ...env,
          PUBLIC_BASE_URL: publicUrls[i % publicUrls.length]!,
          WORKER_METRICS_PORT: String(workerMetrics[i]),
        }),
      );
    }
    processes.push(sandbox, ...apis, ...workers);
    sandbox.start();
    await waitForHttp(`${sandboxUrl}/_sandbox/token-requests`, 30_000);
    const rng = seededRng(seed);
    for (let v = 0; v < VARIANTS; v++) {
      await sandboxCall(sandboxUrl, 'POST', '/_sandbox/application-scripts', {
        script: variantScript(rng, v),
        match: { scaleOutVariant: v },
      });
    }
    for (const p of [...apis, ...workers]) p.start();
    await Promise.all(internalUrls.map((url) => waitForHttp(`${url}/readyz`, 120_000)));
    await Promise.all(workerMetrics.map((port) => waitForHttp(`http://127.0.0.1:${port}/readyz`, 120_000)));
    out(`sandbox, ${apiCount} APIs and ${workerCount} workers up`);

    const usage = new Usage(workers);
    const transitions = new TransitionCounter(
      [...temporal.metrics].filter(([name]) => name.startsWith('temporal-history')).map(([, endpoint]) => endpoint),
    );
    const sampler = setInterval(() => {
      usage.sample();
      void transitions.sample();
    }, 1_000);
    const facades = Object.fromEntries(MERCHANTS.map((m) => [m, new Facade(internalUrls, keys[m]!)]));
    const tag = randomBytes(3).toString('hex');
    const refOf = (i: number) => `so-${tag}-${MERCHANTS[i % MERCHANTS.length]}-${i}`;
    const merchantOf = (i: number) => MERCHANTS[i % MERCHANTS.length]!;
    const answered = new Map<string, string>();
    const answers = new Map<string, number>();
    let noRetryAfter = 0;
    let firstRefusal: string | undefined;
    const count = (status: number | null) =>
      answers.set(String(status ?? 'none'), (answers.get(String(status ?? 'none')) ?? 0) + 1);

    // ---- load, with the kills ------------------------------------------------------------------------------
    const tLoad = Date.now();
    const machineBefore = machineCpu();
    const history2 = cluster.servers.find((p) => p.name === 'temporal-history-2')!;
    const kills: string[] = [];
    const killAt = (share: number, what: () => Promise<void>) =>
      (async () => {
        await sleep(tLoad + (share * apps * 1000) / rate - Date.now());
        await what();
      })();
    const killing = Promise.all([
      killAt(0.4, async () => {
        await history2.kill('SIGKILL');
        kills.push(`SIGKILL ${history2.name} at ${secs(Date.now() - tLoad)}`);
        out(`SIGKILL ${history2.name} (half of the shards); started again in 10 s`);
        await sleep(10_000);
        history2.start();
      }),
      killAt(0.6, async () => {
        const victim = workers[1 % workers.length]!;
        usage.sample();
        await victim.kill('SIGKILL');
        kills.push(`SIGKILL ${victim.name} at ${secs(Date.now() - tLoad)}`);
        out(`SIGKILL ${victim.name}; started again in 5 s`);
        await sleep(5_000);
        victim.start();
      }),
    ]);
    const progress = setInterval(
      () =>
        out(
          `load: ${answered.size} of ${apps} created; answers ${[...answers].map(([s, n]) => `${n}×${s}`).join(' ')}`,
        ),
      30_000,
    );
    try {
      await runPool(apps, 256, async (i) => {
        await sleep(tLoad + (i * 1000) / rate - Date.now());
        const facade = facades[merchantOf(i)]!;
        const body = {
          merchantReference: refOf(i),
          redirectUrl: 'https://shop.example/back',
          callbackUrl: endpointOf[merchantOf(i)]!.financeUrl,
          // Both merchants get every variant (i alternates merchants): equal load, so equal bank reads are expected.
          scaleOutVariant: Math.floor(i / MERCHANTS.length) % VARIANTS,
          settings: { fastPollInterval: '15s', slowPollInterval: '60s', noWebhookPollInterval: '60s' },
        };
        for (let attempt = 0; ; attempt++) {
          const res = await facade.request(i + attempt, 'POST', '/applications', body);
          count(res.status);
          if (res.status === 200 || res.status === 201) {
            answered.set(refOf(i), (res.body as { financeApplicationId: string }).financeApplicationId);
            return;
          }
          if (res.status !== null && res.status !== 503 && res.status !== 429) {
            if (!firstRefusal) firstRefusal = `${res.status} ${JSON.stringify(res.body).slice(0, 500)}`;
            return; // a finding: compared below
          }
          if ((res.status === 503 || res.status === 429) && res.retryAfter === undefined) noRetryAfter += 1;
          await sleep(Math.min(5_000, (res.retryAfter ?? 1) * 1_000));
        }
      });
      await killing;
    } finally {
      clearInterval(progress);
    }
    const loadMs = Date.now() - tLoad;
    out(`load done: ${answered.size} created in ${secs(loadMs)}`);
    if (firstRefusal) out(`the first refusal: ${firstRefusal}`);

    // ---- settle: every application finished at the bank and seen finished through the facade ----------------
    const open = new Set(Array.from({ length: apps }, (_, i) => i));
    const settleBound = Date.now() + 60 * 60_000;
    while (open.size > 0 && Date.now() < settleBound) {
      await runPool(open.size, 32, async (k) => {
        const i = [...open][k];
        if (i === undefined) return;
        const res = await facades[merchantOf(i)]!.request(i, 'GET', `/applications/${refOf(i)}`);
        count(res.status);
        if (res.status === 200 && (res.body as { done?: boolean }).done) open.delete(i);
        else if (res.status === 404 && !answered.has(refOf(i))) open.delete(i);
      });
      out(`settle: ${apps - open.size} of ${apps} finished`);
      if (open.size > 0) await sleep(15_000);
    }
    const settledMs = Date.now() - tLoad;
    const machineAfter = machineCpu();
    clearInterval(sampler);
    usage.sample();
    await transitions.sample();

    // ---- compare with the bank's truth --------------------------------------------------------------------
    const client = new Client({
      connection,
      namespace: NAMESPACE,
      dataConverter: createDataConverter(createPayloadCodec(parsePayloadEncryptionKeys(secrets.payloadKeys))),
    });
    const bank = (await sandboxCall<ApplicationRecord[]>(sandboxUrl, 'GET', '/_sandbox/applications')).filter((a) =>
      String(a.createRequest.merchantReference).startsWith(`so-${tag}-`),
    );
    const ours: OurApplication[] = Array.from({ length: apps }, (_, i) => ({
      merchantReference: refOf(i),
      answeredId: answered.get(refOf(i)),
    }));
    await runPool(apps, 16, async (i) => {
      const res = await facades[merchantOf(i)]!.request(i, 'GET', `/applications/${refOf(i)}`);
      count(res.status);
      if (res.status !== 200) return;
      // The facade does not show duplicates; the workflow state does (typed client, query or result).
      const state = await getFinanceApplication(client, merchantOf(i), refOf(i)).catch(() => undefined);
      ours[i]!.state = {
        ...(res.body as NonNullable<OurApplication['state']>),
        duplicateApplicationIds: state?.duplicateApplicationIds,
      };
      const described = await client.workflow
        .getHandle(financeApplicationWorkflowId(merchantOf(i), refOf(i)))
        .describe();
      ours[i]!.closedAt = described.closeTime?.toISOString();
    });
    const findings: Finding[] = [];
    for (const m of MERCHANTS) {
      const mine = (ref: string) => ref.startsWith(`so-${tag}-${m}-`);
      findings.push(
        ...compareApplications({
          bank: bank.filter((a) => mine(String(a.createRequest.merchantReference))),
          ours: ours.filter((o) => mine(o.merchantReference)),
          callbacks: { merchantId: m, keys: endpointOf[m]!.financeKeys },
        }).findings,
      );
    }
    writeFileSync(join(runDir, 'findings.json'), JSON.stringify(findings, null, 2));

    // ---- figures ----------------------------------------------------------------------------------------------
    const calls = await sandboxCall<ApiCallRecord[]>(sandboxUrl, 'GET', '/_sandbox/api-calls');
    const reads = calls.filter((c) => c.route === 'getStatus');
    const merchantOfId = new Map(
      bank.map((a) => [a.financeApplicationId, String(a.createRequest.merchantReference).split('-')[2]!]),
    );
    const readsBy = new Map<string, number>();
    const perSecond = new Map<number, number>();
    for (const r of reads) {
      const id = /\/applications\/([^/?]+)\/status/.exec(r.path)?.[1] ?? '';
      const m = merchantOfId.get(id) ?? 'other';
      readsBy.set(m, (readsBy.get(m) ?? 0) + 1);
      const second = Math.floor(Date.parse(r.at) / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
    const appHours =
      bank.reduce((sum, a) => sum + (Date.parse(a.updatedAt) - Date.parse(a.createdAt)), 0) / 3_600_000 || 1;
    const latencies: number[] = [];
    for (const our of ours) {
      const primary = bank.find((a) => a.financeApplicationId === our.state?.financeApplicationId);
      if (!primary || !our.state) continue;
      for (const h of our.state.history.filter((x) => x.source === 'webhook')) {
        const sent = primary.webhooks
          .filter((d) => d.trigger === `status:${h.status}`)
          .flatMap((d) => d.attempts.map((a) => Date.parse(a.at)));
        if (sent.length) latencies.push(Date.parse(h.at) - Math.min(...sent));
      }
    }
    const lat = summarize(latencies);
    const dropped = bank.reduce((n, a) => n + a.webhooks.filter((d) => d.outcome === 'dropped').length, 0);
    const changes = bank.reduce((n, a) => n + Math.max(0, a.statusHistory.length - 1), 0);
    const byCategory = (c: Finding['category']) => findings.filter((f) => f.category === c).length;
    const shares = MERCHANTS.map((m) => readsBy.get(m) ?? 0);
    const rows: [string, string, string][] = [
      [
        'applications lost / wrong / acknowledged-but-lost',
        `${byCategory('lost')} / ${byCategory('wrong')} / ${byCategory('ackLost')}`,
        '0 / 0 / 0',
      ],
      ['applications created / at the bank', `${answered.size} / ${bank.length} of ${apps}`, `all ${apps}`],
      ['facade answers', [...answers].map(([s, n]) => `${n}×${s}`).join(', '), '0×500; 503 only with Retry-After'],
      ['503 without Retry-After', String(noRetryAfter), '0'],
      ['webhooks dropped by the bank (polling found those)', `${dropped} of ${changes} status changes`, '≈ 10 %'],
      ['kills', kills.join('; '), 'history and worker'],
      ['load / load + settle', `${secs(loadMs)} / ${secs(settledMs)}`, `load ≈ ${secs((apps * 1000) / rate)}`],
      machineRow(machineBefore, machineAfter, settledMs, apps),
      ...usage.rows(),
      [
        'bank status reads',
        `${reads.length}: ${(reads.length / bank.length).toFixed(2)} per application, ${(reads.length / appHours).toFixed(1)} per application-hour open`,
        'no target',
      ],
      [
        'bank reads, busiest second / mean over busy seconds',
        `${Math.max(0, ...perSecond.values())} / ${(reads.length / (perSecond.size || 1)).toFixed(1)}`,
        `≤ ${readsPerSecond} (BANK_MAX_READS_PER_SECOND)`,
      ],
      [
        'bank reads by merchant',
        MERCHANTS.map((m, i) => `${m} ${shares[i]}`).join(', ') +
          ` (ratio ${(Math.min(...shares) / (Math.max(...shares) || 1)).toFixed(3)})`,
        'equal load: within 10 %',
      ],
      ['state transitions a second (history services)', transitions.rate(settledMs), 'no target'],
      [
        'webhook → status recorded, p50 / p99',
        `${ms(lat.p50)} / ${ms(lat.p99)} (${lat.n} webhook-learned statuses)`,
        'no target',
      ],
    ];
    const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const row of rows) process.stdout.write(`${row.map((c, i) => c.padEnd(widths[i]!)).join('  ')}  ${COMMAND}\n`);
    for (const f of findings.slice(0, 20)) out(`${f.category} ${f.subject}: ${f.what}`);
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    await stopAll();
  }
}

/**
 * The whole machine's CPU over load and settle, per application: what one application's life costs the whole stack
 * (Temporal, PostgreSQL, workers, APIs, sandbox, this bench), and so how long this machine needs for the default 50,000.
 */
function machineRow(
  before: ReturnType<typeof machineCpu>,
  after: ReturnType<typeof machineCpu>,
  overMs: number,
  apps: number,
): [string, string, string] {
  const busy = after.busySeconds - before.busySeconds;
  const perApp = busy / apps;
  const hoursForDefault = (perApp * DEFAULT_APPS) / after.cpus / 3_600;
  return [
    'machine CPU (every process) per application',
    `${(perApp * 1000).toFixed(0)} ms (${busy.toFixed(0)} s busy of ${((after.cpus * overMs) / 1000).toFixed(0)} s on ` +
      `${after.cpus} CPUs); ${DEFAULT_APPS.toLocaleString('en')} applications need ≥ ` +
      `${hoursForDefault.toFixed(1)} h of this machine at full use`,
    'no target',
  ];
}

/** Variant `v`: an approval or a decline, steps 10–25 s apart, each webhook delayed, copied, 10 % dropped. */
function variantScript(rng: Rng, v: number): ApplicationScript {
  const statuses = v % 4 === 3 ? ['IN_PROGRESS', 'DECLINED'] : ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'];
  return {
    steps: statuses.map((status) => ({
      status,
      afterMs: 10_000 + Math.floor(rng.next() * 15_000),
      ...(rng.next() < 0.1 ? { dropWebhook: true } : {}),
    })),
    webhooks: { drop: false, duplicate: 1 + Math.floor(rng.next() * 3), delayMs: Math.floor(rng.next() * 4_000) },
  };
}

/** Each worker's peak RSS and CPU time, summed over its processes (a killed worker's last sample counts). */
class Usage {
  private readonly peak = new Map<string, number>();
  private readonly cpuDone = new Map<string, number>();
  private readonly last = new Map<string, { pid: number; cpu: number }>();

  constructor(private readonly workers: ManagedProcess[]) {}

  sample(): void {
    for (const w of this.workers) {
      const pid = w.pid;
      if (pid === undefined || !w.running) continue;
      try {
        const previous = this.last.get(w.name);
        if (previous && previous.pid !== pid) this.cpuDone.set(w.name, (this.cpuDone.get(w.name) ?? 0) + previous.cpu);
        this.last.set(w.name, { pid, cpu: cpuSeconds(pid) });
        const rss = rssMiB(pid);
        if (Number.isFinite(rss)) this.peak.set(w.name, Math.max(this.peak.get(w.name) ?? 0, rss));
      } catch {
        // exited between the check and the read
      }
    }
  }

  rows(): [string, string, string][] {
    return this.workers.map((w) => [
      `${w.name}: peak RSS / CPU`,
      `${Math.round(this.peak.get(w.name) ?? 0)} MiB / ${((this.cpuDone.get(w.name) ?? 0) + (this.last.get(w.name)?.cpu ?? 0)).toFixed(0)} s (${w.starts} start(s))`,
      'no target',
    ]);
  }
}

/**
 * State transitions: the history services' state_transition_count histogram observes each execution's running count
 * at every update, so its sample count is the number of updates (transitions); summed over processes and restarts.
 */
class TransitionCounter {
  private readonly last = new Map<string, number>();
  private total = 0;

  constructor(private readonly endpoints: string[]) {}

  async sample(): Promise<void> {
    for (const endpoint of this.endpoints) {
      try {
        const text = await (await fetch(`http://${endpoint}/metrics`, { signal: AbortSignal.timeout(2_000) })).text();
        const value = text
          .split('\n')
          .filter((l) => l.startsWith('state_transition_count_count'))
          .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
        const before = this.last.get(endpoint) ?? 0;
        this.total += value >= before ? value - before : value; // a restarted process counts from 0
        this.last.set(endpoint, value);
      } catch {
        // down (the kill): its count resumes from 0 once back
      }
    }
  }

  rate(overMs: number): string {
    return this.total > 0 ? `${(this.total / (overMs / 1000)).toFixed(0)}/s (${this.total} in all)` : 'no metric read';
  }
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : '–');
