import { randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Pool } from 'undici';
import { loadWorkflowBundle } from '../../src/worker/prebuilt-workflow-bundle';
import type { ApplicationRecord } from '../../src/sandbox/types';
import type { FinanceApplicationState } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { UPGRADE_CHECK_SIGNAL } from '../../src/shared/versioning';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';
import {
  buildIdOf,
  makeCurrentVersion,
  nudgeRunsOnOtherBuilds,
  versionSearchValue,
  type DeploymentVersion,
} from '../../src/temporal/worker-deployment';
import { cpuSeconds, freePort, startChild, waitReady, type Child, startSandboxProcess } from '../harness/processes';
import { percentile, report, runPool, summarize } from './stats';

const COMMAND = 'npm run bench -- deploy-under-load';
/** The repository root (this file runs from dist-tools/tools/bench/). */
const ROOT = join(__dirname, '..', '..', '..');
const MINUTE = 60_000;

const HASH_SECRET = 'bench-webhook-hash-secret-0123456789abcdef';
const SECURITY_HEADER = 'benchWebhookSecurityHeader0123456789';
const BANK_CLIENT = { id: 'bench-client', secret: 'bench-client-secret' };

/** The sandbox's statuses that keep an application open, in order: a changing application moves along them. */
const OPEN_STATUSES = ['CREATED', 'IN_PROGRESS', 'APPROVED', 'SIGNED'] as const;
const rankOf = (status: string | null | undefined): number => OPEN_STATUSES.indexOf(status as never);

/** The bank's retries of a webhook (the sandbox's: 6 attempts, from 500 ms, doubling). */
const BANK_ATTEMPTS = 6;
const BANK_FIRST_RETRY_MS = 500;
/** The bank's per-attempt timeout. */
const WEBHOOK_TIMEOUT_MS = 10_000;
/** A merchant's HTTP client's patience with a read (the facade puts no deadline on the query it makes). */
const READ_TIMEOUT_MS = 30_000;

type Phase = 'before' | 'deploy' | 'after';
type Kind = 'webhook' | 'read' | 'longPoll';
type Answer = number | 'timeout' | 'error';

interface Merchant {
  id: string;
  key: string;
}

interface App {
  ref: string;
  merchant: Merchant;
  financeApplicationId: string;
  workflowId: string;
  webhookPath: string;
  /** Created to change status during the deploy (its polls an hour apart: only webhooks tell it). */
  changing: boolean;
  /** Its status at the bank, as the bench set it. */
  bankStatus: string;
  /** A change of it is being delivered (the bank sends one at a time per application here). */
  busy: boolean;
}

interface Change {
  app: App;
  status: string;
  /** The bank's webhook for it was answered 2xx (202 accepted, or 200 ignored). */
  acked: boolean;
  ignored: boolean;
}

interface Tally {
  answers: Map<string, number>;
  latencies: number[];
}

interface Options {
  count: number;
  changing: number;
  webhooksPerSec: number;
  changesPerSec: number;
  readsPerSec: number;
  longPolls: number;
  workersPerBuild: number;
  warmupMs: number;
  tailMs: number;
  moveTimeoutMs: number;
  routingWaitMs: number;
  settleMs: number;
  historySample: number;
  extraEnv: Record<string, string>;
}

function options(): Options {
  const num = (name: string, fallback: number) => {
    const raw = process.env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0, got ${raw}`);
    return value;
  };
  const count = num('BENCH_OPEN_APPLICATIONS', 10_000);
  return {
    count,
    // Three changes each (CREATED → IN_PROGRESS → APPROVED → SIGNED), enough for a deploy of several minutes.
    changing: Math.min(count, num('BENCH_DEPLOY_CHANGING', Math.max(200, Math.round(count / 10)))),
    // A load the stack carries on this 2-core machine before the deploy (20 webhooks/s over 1,000 runs did not).
    webhooksPerSec: num('BENCH_DEPLOY_WEBHOOKS_PER_SEC', 5),
    changesPerSec: num('BENCH_DEPLOY_CHANGES_PER_SEC', 1),
    readsPerSec: num('BENCH_DEPLOY_READS_PER_SEC', 2),
    longPolls: num('BENCH_DEPLOY_LONG_POLLS', 4),
    workersPerBuild: Math.max(1, num('BENCH_DEPLOY_WORKERS', 1)),
    warmupMs: num('BENCH_DEPLOY_WARMUP_MS', 30_000),
    tailMs: num('BENCH_DEPLOY_TAIL_MS', 30_000),
    moveTimeoutMs: num('BENCH_DEPLOY_MOVE_TIMEOUT_MS', 45 * MINUTE),
    routingWaitMs: num('BENCH_DEPLOY_ROUTING_WAIT_MS', 10 * MINUTE),
    settleMs: num('BENCH_DEPLOY_SETTLE_MS', 2 * MINUTE),
    historySample: num('BENCH_DEPLOY_HISTORY_SAMPLE', 200),
    extraEnv: extraEnv(),
  };
}

/** JSON object of BENCH_DEPLOY_ENV: variables for the API and every worker (e.g. WORKER_MAX_CACHED_WORKFLOWS). */
function extraEnv(): Record<string, string> {
  const raw = process.env.BENCH_DEPLOY_ENV;
  if (!raw) return {};
  const parsed = JSON.parse(raw) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Object.values(parsed).some((v) => typeof v !== 'string'))
    throw new Error('BENCH_DEPLOY_ENV must be a JSON object of strings');
  return parsed as Record<string, string>;
}

/**
 * The target of Worker Versioning (docs/decisions/0025-worker-versioning.md): a deploy under load answers no 5xx and
 * acknowledges nothing that is later lost. One stack on a Temporal dev server, every process of the service separate
 * and driven over HTTP only:
 * - the bank sandbox (`node dist/sandbox/server.js`), which holds each application at the status the bench sets
 *   and sends no webhook of its own (the bench is the bank's webhook sender, so it knows every answer);
 * - `node dist/api/server.js`, and build A: BENCH_DEPLOY_WORKERS `node dist/worker.js` (default 1) joining a
 *   fresh Worker Deployment (WORKER_DEPLOYMENT_NAME unique per run) with the bundle's build id, made current;
 * - BENCH_OPEN_APPLICATIONS applications (default 10,000) created through `POST /applications` by two merchants:
 *   the idle ones with the operator's poll policy, and BENCH_DEPLOY_CHANGING (default max(200, N/10)) created
 *   last with polls an hour apart, whose status the bench changes at the bank before it sends their webhook;
 * - under a steady load (webhooks at BENCH_DEPLOY_WEBHOOKS_PER_SEC, BENCH_DEPLOY_CHANGES_PER_SEC of them after a
 *   change, retried like the bank until answered 2xx; facade reads at BENCH_DEPLOY_READS_PER_SEC; long-polls),
 *   build B starts (the same code as another build id, WORKER_BUILD_ID: what is measured is the move), is made
 *   current (makeCurrentVersion), every run pinned to A is nudged (nudgeRunsOnOtherBuilds), and A's workers get
 *   SIGTERM once visibility counts no open run on A.
 * It prints the answers during the deploy (from B's start to A's exit), the time from "B current" to every open
 * run on B, the extra history events per upgraded run, and the changes answered 2xx but not recorded at the end.
 */
export async function benchDeployUnderLoad(): Promise<void> {
  const o = options();
  const deploymentName = `bench-deploy-${randomUUID().slice(0, 8)}`;
  const buildA = buildIdOf(loadWorkflowBundle(join(ROOT, 'dist')).manifest.inputsSha256);
  const A: DeploymentVersion = { deploymentName, buildId: buildA };
  const B: DeploymentVersion = { deploymentName, buildId: `${buildA}-b` };
  process.stdout.write(
    `deploy-under-load: N=${o.count} open applications (${o.changing} of them changing), webhooks ${o.webhooksPerSec}/s ` +
      `(${o.changesPerSec}/s after a change), facade reads ${o.readsPerSec}/s, ${o.longPolls} long-polls, ` +
      `${o.workersPerBuild} worker process(es) per build; deployment ${deploymentName}, A=${A.buildId}, B=${B.buildId}; ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}\n`,
  );
  const started = performance.now();
  const progress = (text: string) =>
    process.stdout.write(`  [${((performance.now() - started) / 1000).toFixed(0)} s] ${text}\n`);

  const env = await TestWorkflowEnvironment.createLocal({ server: ephemeralDevServerOptions() });
  const client = env.client;
  const processes: Child[] = [];
  const pools: Pool[] = [];
  try {
    const [publicPort, internalPort, sandboxPort] = [await freePort(), await freePort(), await freePort()];
    const publicUrl = `http://127.0.0.1:${publicPort}`;
    const internalUrl = `http://127.0.0.1:${internalPort}`;
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;

    const sandbox = await startSandboxProcess({
      root: ROOT,
      port: sandboxPort,
      publicUrl,
      client: BANK_CLIENT,
      securityHeader: SECURITY_HEADER,
    });
    processes.push(sandbox);
    // Every application stays where the bench puts it, and the bench sends its webhooks (it sees every answer).
    await sandboxCall(sandboxUrl, 'POST', '/_sandbox/application-scripts', {
      script: { steps: [], webhooks: { drop: true } },
    });

    const idle: Merchant = { id: 'bench-idle', key: randomBytes(24).toString('base64url') };
    const changer: Merchant = { id: 'bench-changing', key: randomBytes(24).toString('base64url') };
    const taskQueue = `bench-deploy-${randomUUID().slice(0, 8)}`;
    const stackEnv: Record<string, string> = {
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: 'default',
      TASK_QUEUE: taskQueue,
      BANK_BASE_URL: sandboxUrl,
      BANK_AUTH_URL: sandboxUrl,
      BANK_CLIENT_ID: BANK_CLIENT.id,
      BANK_CLIENT_SECRET: BANK_CLIENT.secret,
      PUBLIC_BASE_URL: publicUrl,
      WEBHOOK_HASH_SECRET: HASH_SECRET,
      WEBHOOK_SECURITY_HEADER: SECURITY_HEADER,
      // One key for every process: the API encrypts, the workers decrypt.
      PAYLOAD_ENCRYPTION_KEYS: `bench:${randomBytes(32).toString('base64')}`,
      PORT: String(publicPort),
      INTERNAL_PORT: String(internalPort),
      // Two merchants: the changing applications' reads get their own share of the bank-reads ceiling (fairness).
      MERCHANT_API_KEYS: `${idle.id}:${idle.key},${changer.id}:${changer.key}`,
      // Thousands of creations in a few minutes by design: the creations budget is not what is measured here.
      MERCHANT_CREATIONS_PER_MINUTE: '1000000',
      OPERATOR_API_KEYS: `bench-operator:${randomBytes(24).toString('base64url')}`,
      WORKER_DEPLOYMENT_NAME: deploymentName,
      ...o.extraEnv,
    };
    // The service's own error lines (pino level ≥ 50) and its 503s' causes (logged at warn), to say what a 5xx was.
    const errorLines = { keepLine: (line: string) => /"level":(5\d|60)|"status":503/.test(line) };
    const metricsUrls = new Map<Child, string>();
    const startWorkers = async (version: DeploymentVersion, label: string): Promise<Child[]> => {
      const workers: Child[] = [];
      for (let i = 0; i < o.workersPerBuild; i++) {
        const metricsPort = await freePort();
        const worker = startChild(
          `worker-${label}${i + 1}`,
          join(ROOT, 'dist', 'worker.js'),
          {
            ...stackEnv,
            WORKER_METRICS_PORT: String(metricsPort),
            // A: the bundle's own build id; B: the same code under another id.
            ...(version.buildId === buildA ? {} : { WORKER_BUILD_ID: version.buildId }),
          },
          errorLines,
        );
        processes.push(worker);
        workers.push(worker);
        metricsUrls.set(worker, `http://127.0.0.1:${metricsPort}/metrics`);
        await waitReady(worker, `http://127.0.0.1:${metricsPort}/readyz`);
      }
      return workers;
    };

    const api = startChild('api', join(ROOT, 'dist', 'api', 'server.js'), stackEnv, errorLines);
    processes.push(api);
    const workersA = await startWorkers(A, 'a');
    await waitReady(api, `${internalUrl}/readyz`);
    await makeCurrentVersion(client.workflowService, 'default', A, { identity: 'bench' });
    progress(`build A current; creating ${o.count} applications`);

    // --- The open applications, through the facade (c=16): idle ones first, the changing ones last (so their
    // hour-apart polls start late: a read the bench did not ask for cannot hide a lost webhook).
    // One pool per kind of caller, each with room for what it has in flight: a figure is the service's, not a
    // request queued behind another kind's in this process.
    const facade = new Pool(internalUrl, { connections: 24, pipelining: 1 });
    const hooks = new Pool(publicUrl, { connections: 64, pipelining: 1 });
    const readers = new Pool(internalUrl, { connections: 64, pipelining: 1 });
    const waiters = new Pool(internalUrl, { connections: Math.max(1, o.longPolls), pipelining: 1 });
    pools.push(facade, hooks, readers, waiters);
    const runTag = randomUUID().slice(0, 8);
    const created: { ref: string; merchant: Merchant; financeApplicationId: string; changing: boolean }[] = [];
    const creationAnswers = new Map<string, number>();
    const t0 = performance.now();
    const creationLatencies = await runPool(o.count, 16, async (i) => {
      const changing = i >= o.count - o.changing;
      const merchant = changing ? changer : idle;
      const ref = `dul-${runTag}-${i}`;
      const body = {
        merchantReference: ref,
        redirectUrl: 'https://shop.example/r',
        ...(changing
          ? {
              settings: {
                fastPollInterval: '1h',
                responsiveWindow: 0,
                slowPollInterval: '24h',
                noWebhookPollInterval: '24h',
              },
            }
          : {}),
      };
      const res = await call(
        facade,
        { method: 'POST', path: '/applications', body: JSON.stringify(body), key: merchant.key },
        30_000,
      );
      bump(creationAnswers, String(res.status));
      if (res.status === 201) {
        const { financeApplicationId } = JSON.parse(res.body) as { financeApplicationId: string };
        created.push({ ref, merchant, financeApplicationId, changing });
      }
      if ((i + 1) % 1_000 === 0) progress(`${i + 1} creations answered`);
    });
    const creationMs = performance.now() - t0;
    const s = summarize(creationLatencies);
    report('deploy-under-load: POST /applications (c=16)', {
      n: o.count,
      created: created.length,
      perSec: (o.count / creationMs) * 1000,
      p50ms: s.p50,
      p99ms: s.p99,
      answers: formatAnswers(creationAnswers),
      cmd: COMMAND,
    });
    if (created.length === 0) throw new Error('no application created');

    // Their webhook URLs, as the bank stored them.
    const records = new Map(
      (JSON.parse(await sandboxCall(sandboxUrl, 'GET', '/_sandbox/applications')) as ApplicationRecord[]).map((r) => [
        r.financeApplicationId,
        r,
      ]),
    );
    const apps: App[] = created.map((c) => {
      const webhookUrl = records.get(c.financeApplicationId)?.createRequest.webhookUrl;
      if (typeof webhookUrl !== 'string') throw new Error(`the bank holds no webhookUrl for ${c.financeApplicationId}`);
      const url = new URL(webhookUrl);
      return {
        ...c,
        workflowId: financeApplicationWorkflowId(c.merchant.id, c.ref),
        webhookPath: `${url.pathname}${url.search}`,
        bankStatus: 'CREATED',
        busy: false,
      };
    });
    records.clear();
    const idleApps = apps.filter((a) => !a.changing);
    const changingApps = apps.filter((a) => a.changing);

    const onVersion = (v: DeploymentVersion) =>
      `TemporalWorkerDeploymentVersion = '${versionSearchValue(v)}' AND ExecutionStatus = 'Running'`;
    const openQuery = `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`;
    const count = async (query: string) => (await client.workflow.count(query)).count;
    await waitUntil(async () => (await count(onVersion(A))) >= apps.length, 5 * MINUTE, 'every run on A in visibility');
    progress(`${apps.length} open runs on A; load starts`);

    // --- The load: the bank's webhooks, the merchants' reads and long-polls, answers counted by phase.
    let phase: Phase = 'before';
    const tallies = new Map<string, Tally>();
    const tally = (kind: Kind, p: Phase) => {
      const key = `${kind}:${p}`;
      let t = tallies.get(key);
      if (!t) tallies.set(key, (t = { answers: new Map(), latencies: [] }));
      return t;
    };
    // The first answers of each kind and status other than 2xx, as the caller saw them.
    const odd = new Map<string, string[]>();
    const timed = async (kind: Kind, send: () => Promise<Response>): Promise<Response> => {
      const p = phase;
      const start = performance.now();
      const res = await send();
      const t = tally(kind, p);
      bump(t.answers, String(res.status));
      t.latencies.push(performance.now() - start);
      if (typeof res.status === 'number' && (res.status < 200 || res.status > 299)) {
        const key = `${kind} ${res.status}`;
        const seen = odd.get(key) ?? [];
        if (seen.length < 2) odd.set(key, [...seen, `${p}: ${res.body.slice(0, 300) || '(no body)'}`]);
      }
      return res;
    };
    const webhook = (app: App) =>
      timed('webhook', () =>
        call(
          hooks,
          {
            method: 'POST',
            path: app.webhookPath,
            body: JSON.stringify({ financeApplicationId: app.financeApplicationId }),
          },
          WEBHOOK_TIMEOUT_MS,
        ),
      );
    let stopping = false;
    const changes: Change[] = [];
    let changesSkipped = 0;
    let sandboxFailures = 0;
    let cursor = 0;
    const sendChange = async () => {
      let app: App | undefined;
      for (let tried = 0; tried < changingApps.length && !app; tried++) {
        const candidate = changingApps[cursor++ % changingApps.length]!;
        if (!candidate.busy && rankOf(candidate.bankStatus) < OPEN_STATUSES.length - 1) app = candidate;
      }
      if (!app) {
        changesSkipped++;
        return;
      }
      app.busy = true;
      try {
        const next = OPEN_STATUSES[rankOf(app.bankStatus) + 1]!;
        try {
          await sandboxCall(sandboxUrl, 'POST', `/_sandbox/applications/${app.financeApplicationId}/status`, {
            status: next,
          });
        } catch {
          sandboxFailures++;
          return;
        }
        app.bankStatus = next;
        const change: Change = { app, status: next, acked: false, ignored: false };
        changes.push(change);
        for (let attempt = 1; attempt <= BANK_ATTEMPTS && !stopping; attempt++) {
          const res = await webhook(app);
          if (typeof res.status === 'number' && res.status >= 200 && res.status < 300) {
            change.acked = true;
            change.ignored = res.status === 200;
            return;
          }
          await sleep(BANK_FIRST_RETRY_MS * 2 ** (attempt - 1));
        }
      } finally {
        app.busy = false;
      }
    };
    const inFlight = new Set<Promise<unknown>>();
    const track = (p: Promise<unknown>) => {
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    const loops = [
      openLoop(Math.max(0, o.webhooksPerSec - o.changesPerSec), () =>
        track(webhook(idleApps[Math.floor(Math.random() * idleApps.length)]!)),
      ),
      openLoop(o.changesPerSec, () => track(sendChange())),
      openLoop(o.readsPerSec, () => {
        const app = apps[Math.floor(Math.random() * apps.length)]!;
        track(
          timed('read', () =>
            call(readers, { method: 'GET', path: `/applications/${app.ref}`, key: app.merchant.key }, READ_TIMEOUT_MS),
          ),
        );
      }),
    ];
    const longPollsDone = Array.from({ length: o.longPolls }, async () => {
      while (!stopping) {
        const app = changingApps[Math.floor(Math.random() * changingApps.length)]!;
        const start = performance.now();
        await timed('longPoll', () =>
          call(
            waiters,
            {
              method: 'GET',
              path: `/applications/${app.ref}?waitForChangeFrom=${app.bankStatus}&timeout=30s`,
              key: app.merchant.key,
            },
            45_000,
          ),
        );
        // An answer at once (the workflow has not read the bank's change yet): not a busy loop.
        if (performance.now() - start < 1_000) await sleep(1_000);
      }
    });
    await sleep(o.warmupMs);

    // --- The deploy.
    const cpuOf = (children: Child[]) => children.reduce((sum, c) => sum + (c.exited() ? 0 : cpuSeconds(c.pid)), 0);
    phase = 'deploy';
    const deployStart = performance.now();
    const cpuBefore = { api: cpuSeconds(api.pid), a: cpuOf(workersA) };
    progress('deploy: starting build B');
    const workersB = await startWorkers(B, 'b');
    const bReadyMs = performance.now() - deployStart;
    const setCurrentAt = performance.now();
    // makeCurrentVersion in two steps, timed apart: "B current" is the server accepting it; the nudge waits for the
    // routing to reach every task queue (as makeCurrentVersion does), which took from seconds to over 10 minutes
    // under load here, but no longer than BENCH_DEPLOY_ROUTING_WAIT_MS.
    await setCurrentVersion(client.workflowService, B);
    const bCurrentAt = performance.now();
    const bCurrentWall = Date.now();
    progress('deploy: build B current; waiting for its routing to reach every task queue');
    const routing = routingPropagated(client.workflowService, B, o.routingWaitMs).then((done) => {
      const ms = performance.now() - bCurrentAt;
      progress(`deploy: routing ${done ? 'propagated' : 'NOT propagated'} after ${(ms / 1000).toFixed(1)} s; nudging`);
      return { done, ms };
    });
    const samples: { at: number; onA: number; onB: number; open: number }[] = [];
    const sample = async () => {
      const [onA, onB, open] = await Promise.all([count(onVersion(A)), count(onVersion(B)), count(openQuery)]);
      samples.push({ at: performance.now() - bCurrentAt, onA, onB, open });
      return samples.at(-1)!;
    };
    const nudge = routing
      .then(() => nudgeRunsOnOtherBuilds(client, B))
      .then((r) => ({ ...r, ms: performance.now() - bCurrentAt }));
    let noneOnAMs: number | undefined;
    let allOnBMs: number | undefined;
    let lastPrinted = 0;
    for (;;) {
      const s = await sample();
      if (s.onA === 0) noneOnAMs ??= s.at;
      if (s.onA === 0 && s.onB === s.open) allOnBMs ??= s.at;
      if (allOnBMs !== undefined || s.at > o.moveTimeoutMs) break;
      if (s.at - lastPrinted >= 15_000) {
        lastPrinted = s.at;
        progress(`deploy: on A ${s.onA}, on B ${s.onB}, open ${s.open}`);
      }
      await sleep(1_000);
    }
    const [nudged, routed] = await Promise.all([nudge, routing]);
    const last = samples.at(-1)!;
    progress(`deploy: on A ${last.onA}, on B ${last.onB}, open ${last.open}; stopping build A (SIGTERM)`);
    const cpuA = cpuOf(workersA) - cpuBefore.a;
    const tasksA = await Promise.all(workersA.map((w) => workflowTaskFigures(metricsUrls.get(w)!)));
    const stopAt = performance.now();
    await Promise.all(workersA.map((w) => w.stop(90_000)));
    const aExitMs = performance.now() - stopAt;
    const deployMs = performance.now() - deployStart;
    const cpuDeploy = {
      api: cpuSeconds(api.pid) - cpuBefore.api,
      b: cpuOf(workersB),
    };
    phase = 'after';
    progress(`deploy: build A exited in ${(aExitMs / 1000).toFixed(1)} s; load goes on ${o.tailMs / 1000} s`);
    await sleep(o.tailMs);
    stopping = true;
    for (const stop of loops) stop();
    await Promise.all(longPollsDone);
    await Promise.all(inFlight);
    const tasksB = await Promise.all(workersB.map((w) => workflowTaskFigures(metricsUrls.get(w)!)));

    // --- Acknowledged but lost: every change answered 2xx must be in its application's state.
    const highestAcked = new Map<App, number>();
    for (const c of changes) {
      if (c.acked) highestAcked.set(c.app, Math.max(highestAcked.get(c.app) ?? -1, rankOf(c.status)));
    }
    const states = new Map<App, FinanceApplicationState | undefined>();
    const recorded = (app: App) => rankOf(states.get(app)?.status) >= highestAcked.get(app)!;
    const settleDeadline = Date.now() + o.settleMs;
    for (;;) {
      const pending = [...highestAcked.keys()].filter((app) => !states.has(app) || !recorded(app));
      await runPool(pending.length, 8, async (i) => {
        const app = pending[i]!;
        const res = await call(
          facade,
          { method: 'GET', path: `/applications/${app.ref}`, key: app.merchant.key },
          10_000,
        );
        states.set(app, res.status === 200 ? (JSON.parse(res.body) as FinanceApplicationState) : undefined);
      });
      if ([...highestAcked.keys()].every(recorded) || Date.now() > settleDeadline) break;
      await sleep(2_000);
    }
    const acked = changes.filter((c) => c.acked);
    const lost = acked.filter((c) => rankOf(states.get(c.app)?.status) < rankOf(c.status));
    const sources = new Map<string, number>();
    for (const c of acked) {
      if (lost.includes(c)) continue;
      const entry = states.get(c.app)?.history.find((h) => h.status === c.status);
      bump(sources, entry ? entry.source : 'a later status');
    }

    // --- From the histories: when each run's first task on B completed (all), the extra events (a sample).
    progress('reading the histories');
    const extra = await historyFigures(client, apps, new Set(shuffle(apps).slice(0, o.historySample)), A, B);
    const onBAfter = sorted(extra.onBAt.map((at) => (at - bCurrentWall) / 1000));

    // --- Figures.
    process.stdout.write(
      `deploy-under-load: figures (N=${apps.length} open applications; load average now ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})\n`,
    );
    for (const p of ['before', 'deploy', 'after'] as const) {
      for (const kind of ['webhook', 'read', 'longPoll'] as const) {
        const t = tally(kind, p);
        const lat = summarize(t.latencies);
        report(`deploy-under-load: ${kind}s ${p === 'deploy' ? 'during the deploy' : p}`, {
          n: lat.n,
          fiveXX: fiveXX(t),
          non2xx: non2xx(t),
          answers: formatAnswers(t.answers),
          p50ms: lat.p50,
          p99ms: lat.p99,
          maxMs: lat.max,
          cmd: COMMAND,
        });
      }
    }
    const deployTallies = (['webhook', 'read', 'longPoll'] as const).map((k) => tally(k, 'deploy'));
    const allTallies = [...tallies.values()];
    report('deploy-under-load: 5xx during the deploy', {
      value: deployTallies.reduce((sum, t) => sum + fiveXX(t), 0),
      wholeRun: allTallies.reduce((sum, t) => sum + fiveXX(t), 0),
      non2xxDuringDeploy: deployTallies.reduce((sum, t) => sum + non2xx(t), 0),
      deploySec: deployMs / 1000,
      target: '0',
      cmd: COMMAND,
    });
    report('deploy-under-load: acknowledged but lost', {
      value: lost.length,
      changesAcked: acked.length,
      ackedAsIgnored: acked.filter((c) => c.ignored).length,
      recordedBy: formatAnswers(sources),
      neverAcked: changes.length - acked.length,
      changesSkipped,
      sandboxFailures,
      target: '0',
      cmd: COMMAND,
    });
    const at = (fraction: number) => {
      const goal = samples[0] ? samples[0].onA * (1 - fraction) : 0;
      const hit = samples.find((x) => x.onA <= goal);
      return hit ? (hit.at / 1000).toFixed(1) : '—';
    };
    report('deploy-under-load: B current → every open run on B', {
      seconds: allOnBMs === undefined ? `> ${(o.moveTimeoutMs / 1000).toFixed(0)} (not reached)` : allOnBMs / 1000,
      noneOnASec: noneOnAMs === undefined ? '—' : noneOnAMs / 1000,
      halfMovedSec: at(0.5),
      ninetyPctSec: at(0.9),
      openRuns: last.open,
      onAAtEnd: last.onA,
      routingSec: routed.done ? routed.ms / 1000 : `> ${(o.routingWaitMs / 1000).toFixed(0)} (not propagated)`,
      nudged: nudged.signalled,
      nudgeDoneSec: nudged.ms / 1000,
      bReadySec: bReadyMs / 1000,
      setCurrentSec: (bCurrentAt - setCurrentAt) / 1000,
      aExitSec: aExitMs / 1000,
      target: 'printed',
      cmd: COMMAND,
    });
    report('deploy-under-load: the same from the histories', {
      lastRunOnBSec: onBAfter.at(-1) ?? '—',
      p50Sec: percentile(onBAfter, 50),
      p90Sec: percentile(onBAfter, 90),
      runsOnB: onBAfter.length,
      notMoved: extra.notMoved,
      how: 'each run: B current → its first workflow task completed by B',
      cmd: COMMAND,
    });
    report('deploy-under-load: CPU during the deploy (s)', {
      api: cpuDeploy.api,
      workersAUntilSigterm: cpuA,
      workersB: cpuDeploy.b,
      cmd: COMMAND,
    });
    for (const [label, figures] of [
      ['A (until SIGTERM)', tasksA],
      ['B (whole run)', tasksB],
    ] as const) {
      figures.forEach((f, i) =>
        report(`deploy-under-load: worker ${label} ${i + 1}`, {
          workflowTasks: f.tasks,
          meanTaskMs: f.meanTaskMs,
          meanScheduleToStartMs: f.meanScheduleToStartMs,
          cacheMisses: f.cacheMisses,
          forcedEvictions: f.forcedEvictions,
          cmd: COMMAND,
        }),
      );
    }
    for (const [key, bodies] of odd) for (const body of bodies) process.stdout.write(`  answered ${key}: ${body}\n`);
    for (const child of processes)
      for (const line of child.kept().slice(0, 5))
        process.stdout.write(`  ${child === api ? 'api' : 'worker'} error: ${line.slice(0, 600)}\n`);
    report('deploy-under-load: extra history events per upgraded run', {
      sampled: extra.totals.length,
      p50: percentile(sorted(extra.totals), 50),
      p95: percentile(sorted(extra.totals), 95),
      max: Math.max(...extra.totals),
      oldRunP50: percentile(sorted(extra.oldRun), 50),
      newRunP50: percentile(sorted(extra.newRun), 50),
      viaNudge: extra.viaNudge,
      notMoved: extra.notMoved,
      how: 'old run: upgradeCheck signal (or its last task) to ContinuedAsNew; new run: start to its first task’s commands',
      target: 'printed',
      cmd: COMMAND,
    });
  } catch (err) {
    const tails = processes.map((p) => p.tail()).filter(Boolean);
    throw new Error(`deploy-under-load failed: ${(err as Error).message}\n${tails.join('\n')}`);
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all(processes.map((p) => p.stop()));
    await env.teardown();
  }
}

const E = temporal.api.enums.v1.EventType;
const RoutingState = temporal.api.enums.v1.RoutingConfigUpdateState;
/** Events a workflow task's commands (and accepted messages) record right after its completion. */
const COMMAND_EVENTS = new Set<number>([
  E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
  E.EVENT_TYPE_TIMER_STARTED,
  E.EVENT_TYPE_TIMER_CANCELED,
  E.EVENT_TYPE_MARKER_RECORDED,
  E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
  E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
  E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
  E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
  E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
  E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
]);

/**
 * For each application, its current run: when B completed its first workflow task (onBAt, epoch ms). For the
 * `sample`, also the run it continued from (on A), for the extra events: the old run's part is its events from the
 * `upgradeCheck` nudge (or, when it moved on a task of its own first, from that task's WorkflowTaskScheduled) to
 * ContinuedAsNew, both included; the new run's part is its start and first workflow task with the commands that task
 * recorded. Applications whose runs are not one on A then one on B count as notMoved.
 */
async function historyFigures(
  client: Client,
  apps: App[],
  sample: Set<App>,
  A: DeploymentVersion,
  B: DeploymentVersion,
): Promise<{
  onBAt: number[];
  totals: number[];
  oldRun: number[];
  newRun: number[];
  viaNudge: number;
  notMoved: number;
}> {
  const out = {
    onBAt: [] as number[],
    totals: [] as number[],
    oldRun: [] as number[],
    newRun: [] as number[],
    viaNudge: 0,
    notMoved: 0,
  };
  await runPool(apps.length, 8, async (i) => {
    const app = apps[i]!;
    const current = await client.workflow.getHandle(app.workflowId).fetchHistory();
    const next = current.events ?? [];
    const oldRunId = next[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    let end = next.findIndex((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    if (!oldRunId || end < 0 || buildOf(next[end]!) !== B.buildId) {
      out.notMoved++;
      return;
    }
    out.onBAt.push(millisOf(next[end]!));
    if (!sample.has(app)) return;
    const previous = await client.workflow.getHandle(app.workflowId, oldRunId).fetchHistory();
    const events = previous.events ?? [];
    const canAt = events.findIndex((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
    if (canAt < 0 || !events.some((e) => buildOf(e) === A.buildId)) {
      out.notMoved++;
      return;
    }
    let from = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === UPGRADE_CHECK_SIGNAL);
    if (from >= 0 && from < canAt) out.viaNudge++;
    else {
      from = canAt;
      while (from > 0 && events[from]!.eventType !== E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) from--;
    }
    const oldPart = canAt - from + 1;
    while (end + 1 < next.length && COMMAND_EVENTS.has(next[end + 1]!.eventType ?? 0)) end++;
    const newPart = end + 1;
    out.oldRun.push(oldPart);
    out.newRun.push(newPart);
    out.totals.push(oldPart + newPart);
  });
  return out;
}

type HistoryEvent = NonNullable<History['events']>[number];

/** The build that completed a workflow task (WorkflowTaskCompleted), else undefined. */
function buildOf(event: HistoryEvent): string | undefined {
  const a = event.workflowTaskCompletedEventAttributes;
  return a ? (a.deploymentVersion?.buildId ?? a.workerDeploymentVersion ?? '(none)') : undefined;
}

function millisOf(event: HistoryEvent): number {
  const t = event.eventTime;
  return Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
}

/** A worker's workflow tasks so far, from its /metrics (the SDK's, durations in seconds). */
async function workflowTaskFigures(url: string): Promise<{
  tasks: number;
  meanTaskMs: number;
  meanScheduleToStartMs: number;
  cacheMisses: number;
  forcedEvictions: number;
}> {
  let text = '';
  try {
    text = await (await fetch(url)).text();
  } catch {
    // gone: no figures
  }
  const sum = (name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  const tasks = sum('temporal_workflow_task_execution_latency_count');
  return {
    tasks,
    meanTaskMs: (sum('temporal_workflow_task_execution_latency_sum') / tasks) * 1000,
    meanScheduleToStartMs:
      (sum('temporal_workflow_task_schedule_to_start_latency_sum') /
        sum('temporal_workflow_task_schedule_to_start_latency_count')) *
      1000,
    cacheMisses: sum('temporal_sticky_cache_miss_total'),
    forcedEvictions: sum('temporal_sticky_cache_total_forced_eviction_total'),
  };
}

/** The first half of makeCurrentVersion: asked until the server accepts (B's workers have polled every queue). */
async function setCurrentVersion(service: Client['workflowService'], version: DeploymentVersion): Promise<void> {
  const deadline = Date.now() + 10 * MINUTE;
  for (;;) {
    try {
      await service.setWorkerDeploymentCurrentVersion({
        namespace: 'default',
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: 'bench',
      });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

/** The second half: until the deployment's routing reached every task queue (true), or `waitMs` passed (false). */
async function routingPropagated(
  service: Client['workflowService'],
  version: DeploymentVersion,
  waitMs: number,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { workerDeploymentInfo } = await service.describeWorkerDeployment({
      namespace: 'default',
      deploymentName: version.deploymentName,
    });
    // Completed, or unspecified (a server that does not report it).
    const state =
      workerDeploymentInfo?.routingConfigUpdateState ?? RoutingState.ROUTING_CONFIG_UPDATE_STATE_UNSPECIFIED;
    if (
      state === RoutingState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED ||
      state === RoutingState.ROUTING_CONFIG_UPDATE_STATE_UNSPECIFIED
    )
      return true;
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
}

// --- HTTP.

interface Response {
  status: Answer;
  body: string;
}

/** One request; no answer within `timeoutMs` is 'timeout', a connection failure 'error' (answers of their own). */
async function call(
  pool: Pool,
  req: { method: 'GET' | 'POST'; path: string; body?: string; key?: string },
  timeoutMs: number,
): Promise<Response> {
  try {
    const res = await pool.request({
      method: req.method,
      path: req.path,
      headers: {
        ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(req.key ? { authorization: `Bearer ${req.key}` } : {}),
      },
      body: req.body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    return { status: res.statusCode, body: await res.body.text() };
  } catch (err) {
    const code = (err as { code?: string }).code;
    return {
      status: code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' ? 'timeout' : 'error',
      body: '',
    };
  }
}

/** The sandbox's control API (never exposed): throws on an answer other than 2xx. */
async function sandboxCall(baseUrl: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<string> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
  return text;
}

// --- Load and figures.

/** Calls `fire` `perSecond` times a second, whatever the answers (the bank does not wait); returns stop(). */
function openLoop(perSecond: number, fire: () => void): () => void {
  if (perSecond <= 0) return () => undefined;
  const start = performance.now();
  let fired = 0;
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - start) / 1000) * perSecond);
    for (; fired < due; fired++) fire();
  }, 50);
  return () => clearInterval(timer);
}

const fiveXX = (t: Tally) => sumWhere(t, (code) => /^5\d\d$/.test(code));
const non2xx = (t: Tally) => sumWhere(t, (code) => !/^2\d\d$/.test(code));

function sumWhere(t: Tally, keep: (code: string) => boolean): number {
  let n = 0;
  for (const [code, count] of t.answers) if (keep(code)) n += count;
  return n;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function formatAnswers(answers: Map<string, number>): string {
  const entries = [...answers].sort(([a], [b]) => a.localeCompare(b));
  return entries.length ? entries.map(([k, n]) => `${n}×${k}`).join(',') : 'none';
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);

function shuffle<T>(values: T[]): T[] {
  const out = [...values];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function waitUntil(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(1_000);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
