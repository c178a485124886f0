import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DEFAULT_START_DEADLINE_MS } from '../../src/api/deadlines';
import { SIGNAL_DEADLINE_MS } from '../../src/api/resources/webhooks/receiver';
import { getFinanceApplication } from '../../src/client/finance-applications';
import type { ApiCallRecord, ApplicationRecord, RefreshTaskRecord, WebhookDelivery } from '../../src/sandbox/types';
import { createPayloadCodec, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import { financeApplicationWebhookUrl } from '../../src/security/webhook-hash';
import { createDataConverter } from '../../src/temporal/data-converter';
import { consentRefreshWorkflowType } from '../../src/shared/consent-refresh';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { DuplicateFinanceApplicationId, RefreshTaskId } from '../../src/shared/search-attributes';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from '../../src/temporal/binaries';
import { RECONNECT_CHANNEL_ARGS } from '../../src/temporal/connection';
import { devServerArgs } from '../../src/temporal/dev-server-process';
import {
  attemptFigures,
  backAfter,
  durationsByApi,
  slowest,
  type Outage,
  type ProbeRoute,
  type ProbeSample,
} from './figures';
import { Facade, startMerchantEndpoint, type MerchantEndpoint } from './merchant';
import {
  describePlan,
  makeFaultPlan,
  type ChaosSizes,
  type ConsentPlan,
  type FaultPlan,
  type TimedFault,
} from './plan';
import { parseExposition, type Sample } from '../harness/exposition';
import { freePort, ManagedProcess, sandboxCall, sleep, waitForHttp, waitForTemporal } from '../harness/processes';
import { apiProcess, baseEnv, sandboxProcess, serviceEnv, workerProcess } from '../harness/service-processes';
import {
  compareApplications,
  compareRefreshes,
  compareTransactions,
  countFindings,
  type Category,
  type Finding,
  type OurApplication,
  type OurRefreshRun,
  type RefreshView,
} from './truth';

/** The bounds the README states, printed beside what was measured. */
/** The merchant of the run (its one key in MERCHANT_API_KEYS): every application and refresh is its own. */
const MERCHANT = 'chaos';

export const BOUNDS = {
  /** The receivers' signal deadline, retries included; the margin is the answer's own way back. */
  signalMs: SIGNAL_DEADLINE_MS,
  marginMs: 500,
  /** /readyz: checkTemporal's deadline (src/temporal/connection.ts). */
  readyzMs: 2_000,
  /** The API's gRPC reconnect backoff cap after an outage. */
  reconnectMs: RECONNECT_CHANNEL_ARGS['grpc.max_reconnect_backoff_ms'],
  /** The facade's start deadline (POST /applications, POST /consents/:id/refresh). */
  startMs: DEFAULT_START_DEADLINE_MS,
};

export type Row = [figure: string, value: string, bound: string];

export interface SeedResult {
  seed: number;
  elapsedMs: number;
  runDir: string;
  counts: Record<Category, number>;
  findings: Finding[];
  rows: Row[];
}

export interface SeedOptions {
  seed: number;
  sizes: ChaosSizes;
  /** Bound on waiting for every workflow to finish after the load phase (ms). */
  settleMs: number;
  runDir: string;
  log: (line: string) => void;
}

interface Ports {
  temporal: number;
  ui: number;
  sandbox: number;
  apis: { public: number; internal: number }[];
  /** Each worker's WORKER_METRICS_PORT. */
  workerMetrics: number[];
}

/** The whole stack as separate processes, from the production entry points in dist/. */
class Stack {
  readonly temporal: ManagedProcess;
  readonly sandbox: ManagedProcess;
  readonly apis: ManagedProcess[];
  readonly workers: ManagedProcess[];
  readonly temporalAddress: string;
  readonly sandboxUrl: string;
  readonly publicUrls: string[];
  readonly internalUrls: string[];
  /** The operator key the APIs list: their /metrics are an operator's (src/api/resources/health/routes.ts). */
  readonly operatorKey = randomBytes(24).toString('base64url');

  constructor(
    root: string,
    runDir: string,
    readonly ports: Ports,
    secrets: { hash: string; apiKey: string; header: string; signing: string; payloadKeys: string },
    merchant: MerchantEndpoint,
    sizes: ChaosSizes,
  ) {
    const cli = findTemporalCli();
    if (!cli) throw new Error(MISSING_BINARY_HELP);
    this.temporalAddress = `127.0.0.1:${ports.temporal}`;
    this.sandboxUrl = `http://127.0.0.1:${ports.sandbox}`;
    this.publicUrls = ports.apis.map((p) => `http://127.0.0.1:${p.public}`);
    this.internalUrls = ports.apis.map((p) => `http://127.0.0.1:${p.internal}`);
    const place = { root, log: (name: string) => join(runDir, `${name}.log`) };

    this.temporal = new ManagedProcess(
      'temporal',
      cli,
      devServerArgs({
        port: ports.temporal,
        uiPort: ports.ui,
        namespace: 'default',
        dbFile: join(runDir, 'temporal.db'),
      }),
      baseEnv(),
      place.log('temporal'),
      root,
    );
    this.sandbox = sandboxProcess(place, {
      port: ports.sandbox,
      // Account webhooks go to the last API process; finance webhooks to the API of the worker that created it.
      accountWebhookUrl: `${this.publicUrls[this.publicUrls.length - 1]}/webhooks/accounts`,
      securityHeader: secrets.header,
      logLevel: 'info',
    });
    const appEnv = serviceEnv({
      temporalAddress: this.temporalAddress,
      namespace: 'default',
      taskQueue: 'paylater',
      sandboxUrl: this.sandboxUrl,
      secrets,
      merchant: MERCHANT,
      operatorKey: `chaos-operator:${this.operatorKey}`,
      callbacks: { origin: merchant.origin, transactionsUrl: merchant.transactionsUrl },
    });
    this.apis = ports.apis.map((p, i) => apiProcess(place, `api-${i + 1}`, appEnv, p, this.publicUrls[i]!));
    this.workers = Array.from({ length: sizes.workers }, (_, i) =>
      // Each worker's applications name its own API in their webhookUrl: both receivers get finance webhooks.
      // A metrics port of its own (WORKER_METRICS_PORT, default 9464): two workers share this host.
      workerProcess(place, `worker-${i + 1}`, {
        ...appEnv,
        PUBLIC_BASE_URL: this.publicUrls[i % this.publicUrls.length]!,
        WORKER_METRICS_PORT: String(ports.workerMetrics[i]),
      }),
    );
  }

  all(): ManagedProcess[] {
    return [...this.workers, ...this.apis, this.sandbox, this.temporal];
  }

  async stop(): Promise<void> {
    // Clients first, the server last, so nothing logs a lost server during a normal stop.
    await Promise.all([...this.workers, ...this.apis].map((p) => p.stop()));
    await this.sandbox.stop();
    await this.temporal.stop();
  }
}

/**
 * Probes every API around a Temporal restart: a finance webhook, an account webhook and /readyz, every 250 ms.
 * Also measures event-loop delay in the windows, of this process and of each API (its /metrics), so a slow answer
 * can be told from a starved process.
 */
class Prober {
  readonly samples: ProbeSample[] = [];
  /** Largest event-loop delay seen in a probe window: this process, and each API process (ms). */
  readonly lag = { harnessMs: 0, apiMs: [] as number[] };
  private timer: NodeJS.Timeout | undefined;
  private inFlight = new Set<Promise<void>>();
  private histogram: IntervalHistogram | undefined;

  constructor(
    private readonly stack: Stack,
    private readonly targets: { financePath: string; accountBody: string; header: string },
  ) {}

  start(): void {
    if (this.timer) return;
    void this.apiLag(); // a scrape resets the API's lag histogram: the next one covers the window
    this.histogram = monitorEventLoopDelay({ resolution: 20 });
    this.histogram.enable();
    this.timer = setInterval(() => {
      this.stack.apis.forEach((_, api) => {
        this.probe(api, 'finance-webhook', `${this.stack.publicUrls[api]}${this.targets.financePath}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ financeApplicationId: 'chaos-probe' }),
        });
        this.probe(api, 'account-webhook', `${this.stack.publicUrls[api]}/webhooks/accounts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: this.targets.header },
          body: this.targets.accountBody,
        });
        this.probe(api, 'readyz', `${this.stack.internalUrls[api]}/readyz`, { method: 'GET' });
      });
    }, 250);
  }

  async stop(): Promise<void> {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    await Promise.all(this.inFlight);
    this.histogram?.disable();
    this.lag.harnessMs = Math.max(this.lag.harnessMs, (this.histogram?.max ?? 0) / 1e6);
    const apiMs = await this.apiLag();
    apiMs.forEach((ms, i) => (this.lag.apiMs[i] = Math.max(this.lag.apiMs[i] ?? 0, ms)));
  }

  /** Each API's largest event-loop delay since its last scrape (ms; 0 when unreadable). */
  private apiLag(): Promise<number[]> {
    return Promise.all(
      this.stack.internalUrls.map(async (url) => {
        const text = await fetch(`${url}/metrics`, {
          headers: { authorization: `Bearer ${this.stack.operatorKey}` },
          signal: AbortSignal.timeout(10_000),
        })
          .then((r) => r.text())
          .catch(() => '');
        const max = parseExposition(text).find((m) => m.name === 'nodejs_eventloop_lag_max_seconds');
        return (max?.value ?? 0) * 1000;
      }),
    );
  }

  private probe(api: number, route: ProbeRoute, url: string, init: RequestInit): void {
    const startedAt = Date.now();
    const done = fetch(url, { ...init, signal: AbortSignal.timeout(15_000) })
      .then(async (res) => {
        await res.arrayBuffer();
        return res.status;
      })
      .catch(() => null)
      .then((status) => {
        this.samples.push({ route, api, startedAt, ms: Date.now() - startedAt, status });
      });
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done));
  }
}

export async function runSeed(o: SeedOptions): Promise<SeedResult> {
  const t0 = Date.now();
  const plan = makeFaultPlan(o.seed, o.sizes);
  mkdirSync(o.runDir, { recursive: true });
  writeFileSync(join(o.runDir, 'plan.json'), JSON.stringify(plan, null, 2));
  const ports: Ports = {
    temporal: await freePort(),
    ui: await freePort(),
    sandbox: await freePort(),
    apis: [],
    workerMetrics: [],
  };
  for (let i = 0; i < o.sizes.apis; i++) ports.apis.push({ public: await freePort(), internal: await freePort() });
  for (let i = 0; i < o.sizes.workers; i++) ports.workerMetrics.push(await freePort());
  const secrets = {
    hash: randomBytes(32).toString('base64url'),
    apiKey: randomBytes(24).toString('base64url'),
    header: `Chaos ${randomBytes(18).toString('hex')}`,
    signing: `whsec_${randomBytes(32).toString('base64')}`,
    payloadKeys: `chaos-1:${randomBytes(32).toString('base64')}`,
  };
  const merchant = await startMerchantEndpoint();
  const stack = new Stack(projectRoot(), o.runDir, ports, secrets, merchant, o.sizes);
  const facade = new Facade(stack.internalUrls, secrets.apiKey);
  const probeRef = `chaos-probe-${o.seed}`;
  const prober = new Prober(stack, {
    // The form of the webhookUrls the run's applications carry (the merchant's key and hash), for no application.
    financePath: new URL(financeApplicationWebhookUrl('http://probe', secrets.hash, probeRef, MERCHANT)).pathname,
    accountBody: JSON.stringify({
      consentId: probeRef,
      taskId: 'chaos-probe',
      taskStatus: 'FINISHED',
      bankCode: 'PROBE',
      bankName: 'Chaos probe',
      accounts: [],
    }),
    header: secrets.header,
  });
  const d = describePlan(plan);
  o.log(
    `seed ${o.seed}: ${plan.applications.length} applications, ${d.refreshRuns} refreshes (${plan.consents.length} ` +
      `consents), ${d.transactionBursts} transactionEvent bursts; ${d.workerKills} worker kills, ` +
      `${d.temporalRestarts} Temporal restart(s), ${d.apiFaults} bank API fault injections over ` +
      `${Math.round(o.sizes.durationMs / 1000)} s; logs in ${o.runDir}`,
  );

  const load = { start: loadavg()[0]!, max: loadavg()[0]! };
  const loadTimer = setInterval(() => (load.max = Math.max(load.max, loadavg()[0]!)), 5_000);
  try {
    // Start in any order: the workers and APIs first, Temporal last.
    stack.sandbox.start();
    await waitForHttp(`${stack.sandboxUrl}/_sandbox/token-requests`, 30_000);
    for (const p of [...stack.apis, ...stack.workers]) p.start();
    await Promise.all(stack.publicUrls.map((url) => waitForHttp(`${url}/healthz`, 60_000)));
    stack.temporal.start();
    const temporalUp = await waitForTemporal(stack.temporalAddress, 90_000);
    const apiReadyAfterStart = await Promise.all(
      stack.internalUrls.map(async (url) => (await waitForHttp(`${url}/readyz`, 60_000)) - temporalUp),
    );
    o.log(
      `  stack up: Temporal ${stack.temporalAddress}, APIs ${stack.publicUrls.join(' ')}, sandbox ${stack.sandboxUrl}`,
    );
    // The merchant claims its consents first: a transactionEvent of an unclaimed consent starts nothing.
    for (const consent of plan.consents) await facade.claimConsent(consent.consentId);

    for (const app of plan.applications) {
      await sandboxCall(stack.sandboxUrl, 'POST', '/_sandbox/application-scripts', {
        script: app.script,
        match: { merchantReference: app.merchantReference },
      });
    }

    // ---- load and faults ------------------------------------------------------------------------------------
    const answered = new Map<string, string>();
    const runs: OurRefreshRun[] = [];
    const outages: Outage[] = [];
    const killed: { name: string; at: number }[] = [];
    const loadStart = Date.now();
    const at = (ms: number) => sleep(loadStart + ms - Date.now());

    const creations = plan.applications.map(async (app) => {
      await at(app.atMs);
      const res = await facade.startWithRetry(
        app.api,
        '/applications',
        {
          merchantReference: app.merchantReference,
          redirectUrl: 'https://shop.example/return',
          callbackUrl: merchant.financeUrl,
        },
        180_000,
      );
      const id = (res.body as { financeApplicationId?: string } | undefined)?.financeApplicationId;
      if (res.status !== null && res.status < 300 && id) answered.set(app.merchantReference, id);
      else o.log(`  ${app.merchantReference}: POST /applications answered ${res.status ?? 'nothing'}`);
    });
    const refreshChains = plan.consents.map(async (consent) => {
      await at(consent.atMs);
      await refreshConsent(stack, facade, consent, runs, o.log);
    });

    let restarts = Promise.resolve();
    const faultRuns = plan.faults.map(async (fault) => {
      await at(fault.atMs);
      if (fault.kind === 'restart-temporal') {
        restarts = restarts.then(() => restartTemporal(stack, prober, fault, outages, loadStart, o.log));
        return restarts;
      }
      return applyFault(stack, fault, killed);
    });
    await Promise.all([...faultRuns, ...creations]);
    await restarts;
    await sandboxCall(stack.sandboxUrl, 'DELETE', '/_sandbox/api-faults');
    o.log(`  load phase over after ${secs(Date.now() - loadStart)}; waiting for every workflow to finish`);

    // ---- settle -----------------------------------------------------------------------------------------------
    const settleDeadline = Date.now() + o.settleMs;
    await waitForApplications(facade, plan, settleDeadline);
    await Promise.race([Promise.all(refreshChains), sleep(Math.max(0, settleDeadline - Date.now()))]);
    await waitForBankDeliveries(stack, 90_000);
    o.log(`  settled after ${secs(Date.now() - loadStart)}; comparing with the bank's record`);

    // ---- compare ----------------------------------------------------------------------------------------------
    const connection = await Connection.connect({ address: stack.temporalAddress });
    // The harness reads workflow state as a merchant's code would: through the same encrypting data converter.
    const client = new Client({
      connection,
      dataConverter: createDataConverter(createPayloadCodec(parsePayloadEncryptionKeys(secrets.payloadKeys))),
    });
    let truth!: Awaited<ReturnType<typeof compareAll>>;
    try {
      const until = Date.now() + 30_000;
      for (;;) {
        truth = await compareAll(stack, facade, client, merchant, plan, answered, runs);
        // Some product paths are eventual (a late report amending a result, a callback on its way): look again.
        if (truth.findings.length === 0 || Date.now() > until) break;
        await sleep(3_000);
      }
    } finally {
      await connection.close();
    }

    // The APIs' own clocks on their answers (paylater_http_request_duration_seconds), over the whole run.
    const apiMetrics = (
      await Promise.all(
        stack.internalUrls.map((url) =>
          fetch(`${url}/metrics`, {
            headers: { authorization: `Bearer ${stack.operatorKey}` },
            signal: AbortSignal.timeout(10_000),
          })
            .then((res) => res.text())
            .catch(() => ''),
        ),
      )
    ).flatMap(parseExposition);
    writeFileSync(
      join(o.runDir, 'truth.json'),
      JSON.stringify({
        bankApplications: truth.bankApps,
        refreshTasks: truth.tasks,
        accountWebhooks: truth.accountWebhooks,
        apiCalls: truth.apiCalls,
        ours: truth.ours,
        refreshRuns: runs,
        merchantFinanceCallbacks: [...merchant.financeKeys],
        merchantTransactionBatches: merchant.transactionBatches,
      }),
    );

    const rows = figureRows({
      plan,
      truth,
      stack,
      facade,
      prober,
      outages,
      killed,
      apiReadyAfterStart,
      apiMetrics,
      load,
    });
    const result: SeedResult = {
      seed: o.seed,
      elapsedMs: Date.now() - t0,
      runDir: o.runDir,
      counts: countFindings(truth.findings),
      findings: truth.findings,
      rows,
    };
    writeFileSync(
      join(o.runDir, 'result.json'),
      JSON.stringify({ ...result, probes: prober.samples, outages, facadeCalls: facade.calls }, null, 2),
    );
    return result;
  } finally {
    clearInterval(loadTimer);
    await prober.stop();
    await stack.stop();
    await merchant.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------

async function applyFault(stack: Stack, fault: TimedFault, killed: { name: string; at: number }[]): Promise<void> {
  switch (fault.kind) {
    case 'kill-worker': {
      const worker = stack.workers[fault.worker % stack.workers.length]!;
      killed.push({ name: worker.name, at: Date.now() });
      await worker.kill('SIGKILL');
      await sleep(fault.downMs);
      if (!worker.running) worker.start();
      return;
    }
    case 'api-fault':
      await sandboxCall(stack.sandboxUrl, 'POST', '/_sandbox/api-faults', fault.fault);
      return;
    case 'transaction-burst':
      await sandboxCall(stack.sandboxUrl, 'POST', `/_sandbox/consents/${fault.consentId}/transaction-events`, {
        count: fault.count,
        withinMs: fault.withinMs,
      });
      return;
    case 'restart-temporal':
      throw new Error('restarts are serialised by the caller');
  }
}

async function restartTemporal(
  stack: Stack,
  prober: Prober,
  fault: Extract<TimedFault, { kind: 'restart-temporal' }>,
  outages: Outage[],
  loadStart: number,
  log: (line: string) => void,
): Promise<void> {
  prober.start();
  await sleep(1_000);
  const stoppedAt = Date.now();
  await stack.temporal.kill(fault.signal);
  await sleep(fault.downMs);
  stack.temporal.start();
  const readyAt = await waitForTemporal(stack.temporalAddress, 120_000);
  outages.push({ signal: fault.signal, stoppedAt, readyAt });
  log(
    `  Temporal ${fault.signal} at +${secs(stoppedAt - loadStart)}: answering again ${secs(readyAt - stoppedAt)} later`,
  );
  await sleep(15_000);
  await prober.stop();
}

/** A consent's refreshes in turn; each next one only once the previous one's bank events have all settled. */
async function refreshConsent(
  stack: Stack,
  facade: Facade,
  consent: ConsentPlan,
  runs: OurRefreshRun[],
  log: (line: string) => void,
): Promise<void> {
  for (let i = 0; i < consent.runs.length; i++) {
    const planned = consent.runs[i]!;
    await sandboxCall(stack.sandboxUrl, 'PUT', `/_sandbox/consents/${consent.consentId}`, planned.setup);
    const run: OurRefreshRun = { consentId: consent.consentId, run: i + 1, requestedAt: new Date().toISOString() };
    runs.push(run);
    const res = await facade.startWithRetry(
      consent.api,
      `/consents/${consent.consentId}/refresh`,
      planned.request,
      180_000,
    );
    const taskId = (res.body as { taskId?: string } | undefined)?.taskId;
    if (res.status !== 202 || !taskId) {
      log(`  ${consent.consentId}#${i + 1}: POST refresh answered ${res.status ?? 'nothing'}`);
      return;
    }
    run.taskId = taskId;
    const bound = Date.now() + planned.request.timeout + 120_000;
    run.view = await readRefresh(facade, consent, (v) => v.taskId === taskId && v.done, bound);
    if (i === consent.runs.length - 1) return;
    // The earlier run's result is read once its late events have all been answered, before the next run starts.
    await waitForTaskEvents(stack, taskId, Date.now() + 90_000);
    run.view = await readRefresh(facade, consent, (v) => v.taskId === taskId && v.done, Date.now() + 10_000, 3_000);
  }
}

/** GET /consents/:id/refresh until `ok` (or `bound`); with `settleMs`, keep reading that long and return the last. */
async function readRefresh(
  facade: Facade,
  consent: ConsentPlan,
  ok: (v: RefreshView) => boolean,
  bound: number,
  settleMs = 0,
): Promise<RefreshView | undefined> {
  let last: RefreshView | undefined;
  let okSince: number | undefined;
  for (;;) {
    const res = await facade.request(consent.api, 'GET', `/consents/${consent.consentId}/refresh`);
    if (res.status === 200) last = res.body as RefreshView;
    if (last && ok(last)) {
      okSince ??= Date.now();
      if (Date.now() - okSince >= settleMs) return last;
    }
    if (Date.now() > bound) return last;
    await sleep(1_000);
  }
}

async function waitForTaskEvents(stack: Stack, taskId: string, bound: number): Promise<void> {
  while (Date.now() < bound) {
    const tasks = await sandboxCall<RefreshTaskRecord[]>(stack.sandboxUrl, 'GET', '/_sandbox/refresh-tasks');
    const task = tasks.find((t) => t.taskId === taskId);
    const events = task?.events ?? [];
    const expected = task ? task.banks.filter((b) => !b.neverAnswers).length : 0;
    const emitted = new Set(events.map((e) => String(e.body.bankCode))).size;
    if (task && emitted >= expected && events.every((e) => e.outcome !== 'pending')) return;
    await sleep(1_000);
  }
}

async function waitForApplications(facade: Facade, plan: FaultPlan, bound: number): Promise<void> {
  const open = new Set(plan.applications.map((a) => a.merchantReference));
  while (open.size > 0 && Date.now() < bound) {
    for (const ref of [...open]) {
      const app = plan.applications.find((a) => a.merchantReference === ref)!;
      const res = await facade.request(app.api, 'GET', `/applications/${ref}`);
      if (res.status === 404 || (res.status === 200 && (res.body as { done?: boolean }).done)) open.delete(ref);
    }
    if (open.size > 0) await sleep(2_000);
  }
}

/** Until the bank has no webhook still being attempted (every copy delivered, failed or dropped). */
async function waitForBankDeliveries(stack: Stack, boundMs: number): Promise<void> {
  const bound = Date.now() + boundMs;
  while (Date.now() < bound) {
    const apps = await sandboxCall<ApplicationRecord[]>(stack.sandboxUrl, 'GET', '/_sandbox/applications');
    const account = await sandboxCall<WebhookDelivery[]>(stack.sandboxUrl, 'GET', '/_sandbox/account-webhooks');
    const pending = [...apps.flatMap((a) => a.webhooks), ...account].filter((d) => d.outcome === 'pending');
    if (pending.length === 0) return;
    await sleep(2_000);
  }
}

/** A GET of the facade that must answer 200 or 404 once everything settled (a few tries for a passing 503). */
async function readFacade(facade: Facade, api: number, path: string) {
  for (let attempt = 1; ; attempt++) {
    const res = await facade.request(api + attempt - 1, 'GET', path);
    if (res.status === 200 || res.status === 404) return res;
    if (attempt === 5) throw new Error(`GET ${path} answered ${res.status ?? 'nothing'}: ${JSON.stringify(res.body)}`);
    await sleep(1_000);
  }
}

async function compareAll(
  stack: Stack,
  facade: Facade,
  client: Client,
  merchant: MerchantEndpoint,
  plan: FaultPlan,
  answered: Map<string, string>,
  runs: OurRefreshRun[],
) {
  const bankApps = await sandboxCall<ApplicationRecord[]>(stack.sandboxUrl, 'GET', '/_sandbox/applications');
  const tasks = await sandboxCall<RefreshTaskRecord[]>(stack.sandboxUrl, 'GET', '/_sandbox/refresh-tasks');
  const accountWebhooks = await sandboxCall<WebhookDelivery[]>(stack.sandboxUrl, 'GET', '/_sandbox/account-webhooks');
  const apiCalls = await sandboxCall<ApiCallRecord[]>(stack.sandboxUrl, 'GET', '/_sandbox/api-calls');

  const ours: OurApplication[] = [];
  for (const app of plan.applications) {
    const ref = app.merchantReference;
    const our: OurApplication = { merchantReference: ref, answeredId: answered.get(ref) };
    const res = await readFacade(facade, app.api, `/applications/${ref}`);
    if (res.status === 200) {
      const body = res.body as NonNullable<OurApplication['state']>;
      // The facade does not show duplicates; the workflow state does (typed client, query or result).
      const state = await getFinanceApplication(client, MERCHANT, ref).catch(() => undefined);
      our.state = { ...body, duplicateApplicationIds: state?.duplicateApplicationIds };
      const described = await client.workflow.getHandle(financeApplicationWorkflowId(MERCHANT, ref)).describe();
      our.closedAt = described.closeTime?.toISOString();
    }
    ours.push(our);
  }

  // The latest refresh of each consent is read now (earlier ones were read before the next one started).
  for (const consent of plan.consents) {
    const latest = runs.filter((r) => r.consentId === consent.consentId).pop();
    if (!latest?.taskId) continue;
    const res = await readFacade(facade, consent.api, `/consents/${consent.consentId}/refresh`);
    if (res.status === 200 && (res.body as RefreshView).taskId === latest.taskId) latest.view = res.body as RefreshView;
  }
  const recordedTaskIds = new Set<string>();
  for await (const wf of client.workflow.list({ query: `WorkflowType = '${consentRefreshWorkflowType}'` })) {
    const taskId = wf.typedSearchAttributes.get(RefreshTaskId);
    if (taskId) recordedTaskIds.add(taskId);
  }
  let duplicateAttribute = 0;
  for await (const _ of client.workflow.list({ query: `${DuplicateFinanceApplicationId.name} IS NOT NULL` })) {
    duplicateAttribute += 1;
  }

  const apps = compareApplications({
    bank: bankApps,
    ours,
    callbacks: { merchantId: MERCHANT, keys: merchant.financeKeys },
  });
  const refreshes = compareRefreshes({ tasks, runs, recordedTaskIds });
  const transactions = compareTransactions({ deliveries: accountWebhooks, batches: merchant.transactionBatches });
  return {
    findings: [...apps.findings, ...refreshes.findings, ...transactions.findings],
    apps: apps.figures,
    refreshes: refreshes.figures,
    transactions: transactions.figures,
    duplicateAttribute,
    bankApps,
    tasks,
    accountWebhooks,
    apiCalls,
    ours,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------------------------

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(0)} %` : '–');
const msOrDash = (ms: number | undefined) => (ms === undefined ? '–' : ms < 10_000 ? `${Math.round(ms)} ms` : secs(ms));
const verdict = (value: number | undefined, bound: number) =>
  value === undefined ? '' : value <= bound ? ' (within)' : ' (OVER)';

function figureRows(x: {
  plan: FaultPlan;
  truth: Awaited<ReturnType<typeof compareAll>>;
  stack: Stack;
  facade: Facade;
  prober: Prober;
  outages: Outage[];
  killed: { name: string; at: number }[];
  apiReadyAfterStart: number[];
  apiMetrics: Sample[];
  load: { start: number; max: number };
}): Row[] {
  const { truth, stack } = x;
  const counts = countFindings(truth.findings);
  const rows: Row[] = [];
  const a = truth.apps;
  const r = truth.refreshes;

  rows.push(['LOST (the bank has it, we never finished or recorded it)', String(counts.lost), '0']);
  rows.push(['WRONG (final status, history or refresh result ≠ the bank)', String(counts.wrong), '0']);
  rows.push(['ACKNOWLEDGED-BUT-LOST (answered 2xx, never reached a result)', String(counts.ackLost), '0']);

  const finished = truth.ours.filter((o) => o.state?.done).length;
  rows.push([
    'applications: created / finished / bank applications',
    `${x.plan.applications.length - a.notCreated} / ${finished} / ${a.bankApplications}` +
      (a.notCreated ? ` (${a.notCreated} never created)` : ''),
    `all ${x.plan.applications.length}`,
  ]);
  const undetected = Object.entries(a.duplicatesUndetected)
    .map(([why, n]) => `${n} ${why}`)
    .join(', ');
  const ambiguous = truth.apiCalls.filter((c) => c.route === 'createApplication' && c.afterActing).length;
  const refsWithDuplicates = truth.ours.filter((o) => (o.state?.duplicateApplicationIds ?? []).length > 0).length;
  rows.push([
    'duplicates at the bank: detected / created',
    `${a.duplicatesDetected} / ${a.duplicatesCreated}${undetected ? ` (undetected: ${undetected})` : ''}; ` +
      `${ambiguous} creates answered 5xx/429 after acting, the rest answers that never reached the workflow`,
    'detected = created',
  ]);
  rows.push([
    '  references with a duplicate / DuplicateFinanceApplicationId set',
    `${refsWithDuplicates} / ${truth.duplicateAttribute}`,
    'equal',
  ]);
  rows.push([
    'bank statuses never observed (between two reads)',
    `${a.statusesSkipped} of ${a.statusesAtBank}`,
    'informational',
  ]);
  const ended = Object.entries(r.endedBy)
    .map(([why, n]) => `${n} ${why}`)
    .join(', ');
  rows.push([
    'refreshes: runs / bank tasks (superseded by a retried PUT)',
    `${r.runs} / ${r.bankTasks} (${r.supersededTasks}); ended: ${ended || '–'}` +
      (r.notStarted ? `; ${r.notStarted} never answered 202` : ''),
    '',
  ]);
  rows.push([
    'refresh banks: shown (late) / not delivered by the bank / all',
    `${r.shown} (${r.shownLate}) / ${r.neverDelivered} / ${r.banks}`,
    'every delivered bank shown',
  ]);
  rows.push([
    'transactionEvents: acknowledged / reached the merchant (batches)',
    `${truth.transactions.eventsAcknowledged} / ${truth.transactions.eventsDelivered} (${truth.transactions.batches})`,
    'reached ≥ acknowledged',
  ]);

  // Faults as applied.
  const kinds = attemptFigures([...truth.bankApps.flatMap((app) => app.webhooks), ...truth.accountWebhooks]);
  const fin = kinds.get('financeApplication');
  const changes = truth.bankApps.reduce((n, app) => n + app.statusHistory.length - 1, 0);
  if (fin) {
    const duplicated = truth.bankApps.filter((app) => app.webhooks.some((w) => w.copy > 1)).length;
    rows.push([
      'finance webhooks: dropped / duplicated apps / delayed apps',
      `${fin.dropped} of ${changes} changes (${pct(fin.dropped, changes)}) / ${duplicated} of ${truth.bankApps.length}` +
        ` / ${truth.bankApps.filter((app) => app.script.webhooks?.delayMs).length}`,
      '≈30 % / ≈20 % / ≈10 %',
    ]);
  }
  for (const [kind, f] of kinds) {
    rows.push([
      `${kind} attempts by answer (bank's record)`,
      Object.entries(f.byStatus)
        .map(([s, n]) => `${n}×${s}`)
        .join(' ') +
        (f.noAnswer ? ` ${f.noAnswer}×no answer within the bank's 5 s` : '') +
        (f.failed ? `; ${f.failed} copies gave up` : ''),
      'no "no answer"',
    ]);
  }
  const faulted = truth.apiCalls.filter((c) => c.fault && c.fault !== 'latency');
  rows.push([
    'bank API calls faulted (5xx/429) / after acting / all',
    `${faulted.length} (${pct(faulted.length, truth.apiCalls.length)}) / ${faulted.filter((c) => c.afterActing).length}` +
      ` / ${truth.apiCalls.length}`,
    '≈5 %',
  ]);
  rows.push([
    'machine: cores / 1-min load average at start, highest during the run',
    `${cpus().length} / ${x.load.start.toFixed(1)}, ${x.load.max.toFixed(1)}`,
    'shared with other work',
  ]);
  rows.push([
    'worker kills (SIGKILL) / Temporal restarts',
    `${x.killed.length} / ${x.outages.map((o) => `${o.signal} down ${secs(o.readyAt - o.stoppedAt)}`).join(', ') || '0'}`,
    '~every 20 s / 1–2',
  ]);
  const exits = stack.all().flatMap((p) => p.unexpectedExits);
  rows.push([
    'processes that exited on their own (restarted)',
    exits.length ? exits.map((e) => `${e.name} code ${e.code ?? e.signal}`).join(', ') : '0',
    '0',
  ]);

  // Timing around the restarts.
  const s = x.prober.samples;
  const signalBound = BOUNDS.signalMs + BOUNDS.marginMs;
  const fin503 = slowest(s, 'finance-webhook', 503);
  const acc503 = slowest(s, 'account-webhook', 503);
  rows.push([
    'slowest 503, finance receiver (probes during outages)',
    msOrDash(fin503) + verdict(fin503, signalBound),
    `≤ ${BOUNDS.signalMs / 1000} s deadline + ${BOUNDS.marginMs} ms`,
  ]);
  rows.push([
    'slowest 503, account receiver (probes during outages)',
    msOrDash(acc503) + verdict(acc503, signalBound),
    `≤ ${BOUNDS.signalMs / 1000} s deadline + ${BOUNDS.marginMs} ms`,
  ]);
  const probeCounts = (route: ProbeRoute) => {
    const of = s.filter((p) => p.route === route);
    return `${of.filter((p) => p.status === 503).length} of ${of.length} probes 503, ${of.filter((p) => p.status === null).length} unanswered`;
  };
  rows.push(['  finance / account probes', `${probeCounts('finance-webhook')}; ${probeCounts('account-webhook')}`, '']);
  const byClock = (route: string, status: string) =>
    durationsByApi(x.apiMetrics, route, status, [2.5, 5])
      .map((b) => `${b.count} ${b.upTo === null ? '> 5 s' : `≤ ${b.upTo} s`}`)
      .join(', ');
  rows.push([
    "  503s by the APIs' own clock (finance; account route)",
    `${byClock('/webhooks/finance-applications/:ref/:hash', '503')}; ${byClock('/webhooks/accounts', '503')}`,
    'none > 5 s',
  ]);
  rows.push([
    '  largest event-loop delay in the outage windows: harness / APIs',
    `${msOrDash(x.prober.lag.harnessMs)} / ${x.prober.lag.apiMs.map((ms) => msOrDash(ms)).join(' / ') || '–'}`,
    'small against the bounds',
  ]);
  const readyz = slowest(s, 'readyz');
  rows.push([
    'slowest /readyz (probes)',
    msOrDash(readyz) + verdict(readyz, BOUNDS.readyzMs + BOUNDS.marginMs),
    `≤ ${BOUNDS.readyzMs / 1000} s + ${BOUNDS.marginMs} ms`,
  ]);
  const back = (route: ProbeRoute) =>
    x.outages.map((o) => stack.apis.map((_, api) => msOrDash(backAfter(s, route, o, api))).join(' / ')).join('; ');
  const worstBack = Math.max(
    ...x.outages.flatMap((o) => stack.apis.map((_, api) => backAfter(s, 'finance-webhook', o, api) ?? Infinity)),
  );
  rows.push([
    'API accepts webhooks again after Temporal answers (per restart: api-1 / api-2)',
    (back('finance-webhook') || '–') + (x.outages.length ? verdict(worstBack, BOUNDS.reconnectMs) : ''),
    `≈ ${BOUNDS.reconnectMs / 1000} s (reconnect cap); < 0: before the harness's own check`,
  ]);
  rows.push(['/readyz 200 again after Temporal answers', back('readyz') || '–', `≈ ${BOUNDS.reconnectMs / 1000} s`]);
  rows.push([
    'API /readyz 200 after Temporal first started (API started before it)',
    x.apiReadyAfterStart.map((ms) => msOrDash(ms)).join(' / '),
    'start in any order',
  ]);
  for (const route of ['POST /applications', 'POST /consents/:id/refresh']) {
    const calls = x.facade.calls.filter((c) => c.route === route);
    const worst = Math.max(0, ...calls.filter((c) => c.status === 503).map((c) => c.ms));
    rows.push([
      `facade ${route}: 503s (slowest) / calls`,
      `${calls.filter((c) => c.status === 503).length} (${msOrDash(worst)}) / ${calls.length}` +
        `${calls.some((c) => c.status === null) ? `; ${calls.filter((c) => c.status === null).length} unanswered` : ''}`,
      `≤ ${BOUNDS.startMs / 1000} s start deadline`,
    ]);
  }
  const odd = x.facade.calls.filter(
    (c) => c.route.startsWith('POST') && c.status !== null && ![200, 201, 202, 503].includes(c.status),
  );
  const oddProbes = s.filter((p) => p.status !== null && ![200, 202, 503].includes(p.status));
  rows.push([
    'answers other than 2xx/503: facade start calls; probes',
    `${countBy(odd.map((c) => `${c.status} ${c.route}`)) || '0'}; ${countBy(oddProbes.map((p) => `${p.status} ${p.route}`)) || '0'}`,
    '0 (never a 500)',
  ]);
  return rows;
}

const countBy = (items: string[]) =>
  [...items.reduce((m, k) => m.set(k, (m.get(k) ?? 0) + 1), new Map<string, number>())]
    .map(([k, n]) => `${n}× ${k}`)
    .join(', ');
