import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Pool } from 'undici';
import type { ApplicationRecord } from '../../src/sandbox/types';
import * as currentDevServer from '../../src/temporal/dev-server';
import {
  cpuSeconds,
  freePort,
  sandboxCall,
  startChild,
  waitReady,
  type Child,
  startSandboxProcess,
} from '../harness/processes';
import { median, report, runPool, summarize } from './stats';

const COMMAND = 'npm run bench -- tenancy-throughput';
/** Creation and webhook throughput with tenancy and rate limiting on, against the build before it. */
const TARGET_RATIO = 0.95;
/** The repository root (this file runs from dist-tools/tools/bench/). */
const ROOT = join(__dirname, '..', '..', '..');
/** main before tenancy and rate limiting. */
const BASELINE_REF = process.env.BENCH_BASELINE_REF || 'a3f4fed';
/** Stacks started per build alternate A B B A (TENANCY_BENCH_ROUNDS rounds in all), so drift hits both alike. */
const ROUNDS = Number(process.env.TENANCY_BENCH_ROUNDS) || 4;
const CREATIONS = Number(process.env.TENANCY_BENCH_CREATIONS) || 200;
const WEBHOOKS = Number(process.env.TENANCY_BENCH_WEBHOOKS) || 1_500;
const CONCURRENCY = Number(process.env.TENANCY_BENCH_CONCURRENCY) || 16;
/** Merchants (keys) the creations are spread over, round robin: tenancy is exercised, not one merchant alone. */
const MERCHANTS = Number(process.env.TENANCY_BENCH_MERCHANTS) || 2;
/** Uncounted requests before each measured phase (JIT, connections, caches). */
const WARMUP_CREATIONS = 32;
const WARMUP_WEBHOOKS = 200;
/** Pause before each measured phase, so the previous phase's tail (workflow tasks, bank reads) is not counted. */
const SETTLE_MS = Number(process.env.TENANCY_BENCH_SETTLE_MS ?? 2_000);

const HASH_SECRET = 'bench-webhook-hash-secret-0123456789abcdef';
const SECURITY_HEADER = 'benchWebhookSecurityHeader0123456789';
const BANK_CLIENT = { id: 'bench-client', secret: 'bench-client-secret' };

interface Build {
  label: 'A' | 'B';
  /** What the tables print: the ref and its commit. */
  name: string;
  /** A checkout with `npm run build` done: dist/worker.js, dist/api/server.js, dist/temporal/dev-server.js. */
  root: string;
}

interface RoundFigures {
  build: Build;
  creationsPerSec: number;
  creationLatencies: number[];
  /** API + worker CPU per created application (ms). */
  cpuMsPerCreation: number;
  webhooksPerSec: number;
  webhookLatencies: number[];
  cpuMsPerWebhook: number;
  /** Answers other than 201 (creation) and 202 (webhook) in the measured phases, by status ('error': no answer). */
  otherAnswers: Record<string, number>;
}

/**
 * The throughput target of tenancy and rate limiting (docs/benchmarks.md): two builds in one run on this machine, each
 * driven only over HTTP through its production entry points, so that any two commits can be compared:
 * - A, the baseline: BENCH_BASELINE_REF (default a3f4fed, main before tenancy) checked out with `git worktree add`
 *   into a temporary folder (node_modules and .temporal linked to this checkout's) and built there with
 *   `npm run build`; BENCH_BASELINE_DIR=<folder> uses a folder already built instead (nothing is removed then);
 * - B, this checkout's dist/ (`npm run bench` builds it).
 * Each round starts a fresh stack of one build: the Temporal dev server with the build's own options
 * (dist/temporal/dev-server.js: its search attributes and dynamic config), the bank sandbox (`node
 * dist/sandbox/server.js` of this checkout for both: the bank stays the same), `node dist/worker.js` and
 * `node dist/api/server.js` of the build, all on free ports. Merchants (MERCHANT_API_KEYS, round robin) create
 * TENANCY_BENCH_CREATIONS applications through `POST /applications` at TENANCY_BENCH_CONCURRENCY; the bank then
 * holds each at its first status. Their webhook URLs are read from the sandbox's ground truth (the create answer
 * may not carry them), and TENANCY_BENCH_WEBHOOKS status webhooks go to the public listener, round robin over
 * them, at the same concurrency. TENANCY_BENCH_ENV (a JSON object) adds variables to both builds' processes.
 * It asserts nothing: the ratio B/A of the medians is printed beside the target.
 */
export async function benchTenancyThroughput(): Promise<void> {
  const current: Build = { label: 'B', name: describeCheckout(), root: ROOT };
  const baseline = prepareBaseline();
  const rounds: RoundFigures[] = [];
  try {
    const builds = { A: baseline.build, B: current };
    const order = Array.from({ length: ROUNDS }, (_, i) => (['A', 'B', 'B', 'A'] as const)[i % 4]!);
    process.stdout.write(
      `tenancy-throughput: A = ${baseline.build.name} (${baseline.build.root}${baseline.note}); B = this checkout, ${current.name} ` +
        `(${ROOT}/dist); rounds ${order.join(' ')}, each a fresh stack; per round ${CREATIONS} creations and ` +
        `${WEBHOOKS} webhooks at c=${CONCURRENCY}, ${MERCHANTS} merchants\n`,
    );
    for (const [i, label] of order.entries()) {
      const figures = await runRound(builds[label], i + 1);
      rounds.push(figures);
      report(`tenancy-throughput round ${i + 1}: ${label}`, {
        creationsPerSec: figures.creationsPerSec,
        createP50ms: summarize(figures.creationLatencies).p50,
        cpuMsPerCreation: figures.cpuMsPerCreation,
        webhooksPerSec: figures.webhooksPerSec,
        webhookP50ms: summarize(figures.webhookLatencies).p50,
        cpuMsPerWebhook: figures.cpuMsPerWebhook,
        other: formatAnswers(figures.otherAnswers),
        cmd: COMMAND,
      });
    }
    printSummary(rounds, builds);
  } finally {
    baseline.cleanup();
  }
}

/** One fresh stack of `build`: creations, then webhooks to them; every process stopped before it returns. */
async function runRound(build: Build, round: number): Promise<RoundFigures> {
  const processes: Child[] = [];
  const env = await TestWorkflowEnvironment.createLocal({ server: await devServerOptionsOf(build) });
  try {
    const [publicPort, internalPort, workerMetricsPort, sandboxPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
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
    // Every application stays at its first status: no webhook of the bank's own, reads answer the same.
    await sandboxCall(sandboxUrl, 'POST', '/_sandbox/application-scripts', { script: { steps: [] } });

    const merchants = Array.from({ length: MERCHANTS }, (_, i) => ({
      name: `bench-merchant-${i + 1}`,
      key: randomBytes(24).toString('base64url'),
    }));
    const stackEnv: Record<string, string> = {
      NODE_ENV: 'production',
      LOG_LEVEL: process.env.TENANCY_BENCH_LOG_LEVEL || 'info',
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: 'default',
      TASK_QUEUE: `bench-tenancy-${round}-${randomUUID().slice(0, 8)}`,
      BANK_BASE_URL: sandboxUrl,
      BANK_AUTH_URL: sandboxUrl,
      BANK_CLIENT_ID: BANK_CLIENT.id,
      BANK_CLIENT_SECRET: BANK_CLIENT.secret,
      PUBLIC_BASE_URL: publicUrl,
      WEBHOOK_HASH_SECRET: HASH_SECRET,
      WEBHOOK_SECURITY_HEADER: SECURITY_HEADER,
      // One key for both processes: the API encrypts, the worker decrypts.
      PAYLOAD_ENCRYPTION_KEYS: `bench:${randomBytes(32).toString('base64')}`,
      PORT: String(publicPort),
      INTERNAL_PORT: String(internalPort),
      WORKER_METRICS_PORT: String(workerMetricsPort),
      MERCHANT_API_KEYS: merchants.map((m) => `${m.name}:${m.key}`).join(','),
      // Operator keys (since tenancy); a build without them ignores the variable.
      OPERATOR_API_KEYS: `bench-operator:${randomBytes(24).toString('base64url')}`,
      ...extraEnv(),
    };
    const worker = startChild('worker', workerEntry(build.root), stackEnv);
    const api = startChild('api', join(build.root, 'dist', 'api', 'server.js'), stackEnv);
    processes.push(worker, api);
    await Promise.all([
      waitReady(worker, `http://127.0.0.1:${workerMetricsPort}/readyz`),
      waitReady(api, `${internalUrl}/readyz`),
    ]);
    const serviceCpu = () => cpuSeconds(api.pid) + cpuSeconds(worker.pid);
    const otherAnswers: Record<string, number> = {};

    // --- Creation through the facade, merchants round robin.
    const facade = new Pool(internalUrl, { connections: CONCURRENCY, pipelining: 1 });
    const created: string[] = [];
    const create = async (i: number, count: boolean) => {
      const merchant = merchants[i % merchants.length]!;
      const { status, body } = await request(facade, '/applications', {
        authorization: `Bearer ${merchant.key}`,
        body: { merchantReference: `tt-${round}-${count ? 'm' : 'w'}-${i}`, redirectUrl: 'https://shop.example/r' },
      });
      if (status === 201) created.push((JSON.parse(body) as { financeApplicationId: string }).financeApplicationId);
      else if (count) otherAnswers[`create ${status}`] = (otherAnswers[`create ${status}`] ?? 0) + 1;
    };
    try {
      await runPool(WARMUP_CREATIONS, CONCURRENCY, (i) => create(i, false));
      await sleep(SETTLE_MS);
      const createdBefore = created.length;
      const cpuBefore = serviceCpu();
      const t0 = performance.now();
      const creationLatencies = await runPool(CREATIONS, CONCURRENCY, (i) => create(i, true));
      const creationMs = performance.now() - t0;
      const creations = created.length - createdBefore;
      const cpuMsPerCreation = ((serviceCpu() - cpuBefore) * 1000) / creations;
      if (creations === 0) throw new Error(`no application created: ${JSON.stringify(otherAnswers)}`);

      // --- Status webhooks to the public listener, at the URL the bank was given (its ground truth).
      const targets = await webhookTargets(sandboxUrl, publicUrl, created);
      const listener = new Pool(publicUrl, { connections: CONCURRENCY, pipelining: 1 });
      let accepted = 0;
      const send = async (i: number, count: boolean) => {
        const target = targets[i % targets.length]!;
        const { status } = await request(listener, target.path, { body: target.body });
        if (!count) return;
        if (status === 202) accepted++;
        else otherAnswers[`webhook ${status}`] = (otherAnswers[`webhook ${status}`] ?? 0) + 1;
      };
      try {
        await runPool(WARMUP_WEBHOOKS, CONCURRENCY, (i) => send(i, false));
        await sleep(SETTLE_MS);
        const webhookCpuBefore = serviceCpu();
        const t1 = performance.now();
        const webhookLatencies = await runPool(WEBHOOKS, CONCURRENCY, (i) => send(i, true));
        const webhookMs = performance.now() - t1;
        if (accepted === 0) throw new Error(`no webhook accepted: ${JSON.stringify(otherAnswers)}`);
        return {
          build,
          creationsPerSec: (creations / creationMs) * 1000,
          creationLatencies,
          cpuMsPerCreation,
          webhooksPerSec: (accepted / webhookMs) * 1000,
          webhookLatencies,
          cpuMsPerWebhook: ((serviceCpu() - webhookCpuBefore) * 1000) / accepted,
          otherAnswers,
        };
      } finally {
        await listener.close();
      }
    } finally {
      await facade.close();
    }
  } catch (err) {
    // The children's last words say why a build did not start or answer.
    const tails = processes.map((p) => p.tail()).filter(Boolean);
    throw new Error(`round ${round} (${build.label}) failed: ${(err as Error).message}\n${tails.join('\n')}`);
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    await env.teardown();
  }
}

/** Each created application's webhook path and body, from the URL the bank stored at creation. */
async function webhookTargets(
  sandboxUrl: string,
  publicUrl: string,
  financeApplicationIds: string[],
): Promise<{ path: string; body: unknown }[]> {
  const res = await fetch(`${sandboxUrl}/_sandbox/applications`);
  if (!res.ok) throw new Error(`GET /_sandbox/applications answered ${res.status}`);
  const records = new Map(((await res.json()) as ApplicationRecord[]).map((r) => [r.financeApplicationId, r]));
  return financeApplicationIds.map((financeApplicationId) => {
    const webhookUrl = records.get(financeApplicationId)?.createRequest.webhookUrl;
    if (typeof webhookUrl !== 'string') throw new Error(`the bank holds no webhookUrl for ${financeApplicationId}`);
    const url = new URL(webhookUrl);
    if (url.origin !== publicUrl) throw new Error(`webhookUrl ${url.origin}… is not on the public listener`);
    return { path: `${url.pathname}${url.search}`, body: { financeApplicationId } };
  });
}

/** A build's own dev-server options (search attributes, dynamic config); this checkout's if it has none. */
async function devServerOptionsOf(build: Build) {
  const module = (await import(join(build.root, 'dist', 'temporal', 'dev-server.js'))) as Partial<
    typeof currentDevServer
  >;
  return (module.ephemeralDevServerOptions ?? currentDevServer.ephemeralDevServerOptions)();
}

/** JSON object of TENANCY_BENCH_ENV: variables for both builds' worker and API (e.g. MERCHANTS_FILE). */
function extraEnv(): Record<string, string> {
  const raw = process.env.TENANCY_BENCH_ENV;
  if (!raw) return {};
  const parsed = JSON.parse(raw) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Object.values(parsed).some((v) => typeof v !== 'string'))
    throw new Error('TENANCY_BENCH_ENV must be a JSON object of strings');
  return parsed as Record<string, string>;
}

// --- The baseline build.

interface Baseline {
  build: Build;
  note: string;
  cleanup(): void;
}

function git(args: string[], cwd = ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

function describeCheckout(): string {
  const head = git(['rev-parse', '--short', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
  return `${git(['rev-parse', '--abbrev-ref', 'HEAD'])} ${head}${dirty ? ' + uncommitted changes' : ''}`;
}

/** The worker's entry in a build: dist/worker.js, or dist/worker/main.js in a baseline built while the entry was there. */
function workerEntry(root: string): string {
  const current = join(root, 'dist', 'worker.js');
  return existsSync(current) ? current : join(root, 'dist', 'worker', 'main.js');
}

/** BENCH_BASELINE_REF checked out and built in a temporary worktree (or BENCH_BASELINE_DIR as it is). */
function prepareBaseline(): Baseline {
  const given = process.env.BENCH_BASELINE_DIR;
  if (given) {
    if (!existsSync(workerEntry(given)))
      throw new Error(`BENCH_BASELINE_DIR=${given} has no dist/worker.js: run npm run build there`);
    const name = `${git(['rev-parse', '--short', 'HEAD'], given)} (BENCH_BASELINE_DIR)`;
    return { build: { label: 'A', name, root: given }, note: ', given', cleanup: () => undefined };
  }
  const sha = git(['rev-parse', '--verify', `${BASELINE_REF}^{commit}`]);
  const dir = mkdtempSync(join(tmpdir(), 'paylater-baseline-'));
  const links = ['node_modules', '.temporal'].map((name) => join(dir, name));
  const cleanup = () => {
    // The links first: removing the worktree must never reach into this checkout's node_modules.
    for (const link of links) if (isSymlink(link)) unlinkSync(link);
    try {
      git(['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(['worktree', 'prune']);
    }
  };
  try {
    git(['worktree', 'add', '--detach', dir, sha]);
    // The baseline's own dependencies when its lockfile differs from this checkout's (a dependency moved since:
    // this checkout's node_modules may no longer build it); else this checkout's, linked. The Temporal binaries are
    // this checkout's either way (the baseline's postinstall finds them there).
    const ownDependencies = !sameFile(sha, 'package-lock.json');
    const linked = ownDependencies ? ['.temporal'] : ['node_modules', '.temporal'];
    for (const name of linked) {
      if (existsSync(join(ROOT, name))) symlinkSync(realpathSync(join(ROOT, name)), join(dir, name));
    }
    const t0 = performance.now();
    const run = (args: string[]) => {
      try {
        execFileSync('npm', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (err) {
        const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`npm ${args[0]} of ${BASELINE_REF} failed:\n${String(stdout ?? '')}${String(stderr ?? '')}`);
      }
    };
    if (ownDependencies) run(['ci', '--no-audit', '--no-fund']);
    run(['run', 'build', '--silent']);
    const how = ownDependencies ? 'installed (its own lockfile) and built' : 'built';
    const note = `, ${how} in ${((performance.now() - t0) / 1000).toFixed(0)} s`;
    const name = sha.startsWith(BASELINE_REF) ? sha.slice(0, 7) : `${BASELINE_REF} ${sha.slice(0, 7)}`;
    return { build: { label: 'A', name, root: dir }, note, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

/** Whether `path` is the same at `sha` as in this checkout's HEAD. */
function sameFile(sha: string, path: string): boolean {
  try {
    git(['diff', '--quiet', sha, 'HEAD', '--', path]);
    return true;
  } catch {
    return false;
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** One POST; a connection failure is an answer of its own ('error'), not the end of the run. */
async function request(
  pool: Pool,
  path: string,
  options: { body: unknown; authorization?: string },
): Promise<{ status: number | 'error'; body: string }> {
  try {
    const res = await pool.request({
      method: 'POST',
      path,
      headers: {
        'content-type': 'application/json',
        ...(options.authorization ? { authorization: options.authorization } : {}),
      },
      body: JSON.stringify(options.body),
    });
    return { status: res.statusCode, body: await res.body.text() };
  } catch {
    return { status: 'error', body: '' };
  }
}

// --- Figures.

function printSummary(rounds: RoundFigures[], builds: Record<'A' | 'B', Build>): void {
  const of = (label: 'A' | 'B', pick: (r: RoundFigures) => number) =>
    rounds.filter((r) => r.build.label === label).map(pick);
  const rows: string[][] = [['figure', `A: ${builds.A.name}`, `B: ${builds.B.name}`, 'B/A', 'target']];
  const row = (figure: string, pick: (r: RoundFigures) => number, target: string, higherIsBetter: boolean) => {
    const a = of('A', pick);
    const b = of('B', pick);
    const ratio = median(b) / median(a);
    const verdict = higherIsBetter ? (ratio >= TARGET_RATIO ? ' (meets target)' : ' (BELOW target)') : '';
    rows.push([figure, medianOf(a), medianOf(b), `${ratio.toFixed(2)}${verdict}`, target]);
  };
  row(`creations/s, POST /applications c=${CONCURRENCY}`, (r) => r.creationsPerSec, `≥ ${TARGET_RATIO}× A`, true);
  row(`webhooks/s accepted (202), c=${CONCURRENCY}`, (r) => r.webhooksPerSec, `≥ ${TARGET_RATIO}× A`, true);
  row('creation p50 latency, ms', (r) => summarize(r.creationLatencies).p50, 'printed', false);
  row('webhook p50 latency, ms', (r) => summarize(r.webhookLatencies).p50, 'printed', false);
  row('API + worker CPU ms per creation', (r) => r.cpuMsPerCreation, 'printed', false);
  row('API + worker CPU ms per webhook', (r) => r.cpuMsPerWebhook, 'printed', false);
  const answers = (label: 'A' | 'B') => {
    const total: Record<string, number> = {};
    for (const r of rounds.filter((x) => x.build.label === label))
      for (const [k, n] of Object.entries(r.otherAnswers)) total[k] = (total[k] ?? 0) + n;
    return formatAnswers(total);
  };
  rows.push(['answers other than 201 / 202 (all rounds)', answers('A'), answers('B'), '—', 'none']);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const [i, r] of rows.entries()) {
    process.stdout.write(`${r.map((cell, j) => cell.padEnd(widths[j]!)).join('  ')}  ${i ? COMMAND : 'command'}\n`);
  }
}

/** `median 251 (240 262)`: the median of the rounds, then each round in run order. */
function medianOf(values: number[]): string {
  const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(v >= 10 ? 1 : 2));
  return `median ${fmt(median(values))} (${values.map(fmt).join(' ')})`;
}

function formatAnswers(answers: Record<string, number>): string {
  const entries = Object.entries(answers);
  return entries.length ? entries.map(([k, n]) => `${n}× ${k}`).join(', ') : 'none';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
