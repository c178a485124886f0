import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/processes';
import { report } from './stats';

/** The repository root (this file runs from dist-tools/tools/bench/). */
const ROOT = join(__dirname, '..', '..', '..');
const COMMAND = 'npm run bench -- cold-start';
const READY_TIMEOUT_MS = 120_000;

/**
 * The target (docs/benchmarks.md): `npm start` in a fresh clone after `npm install` ready in ≤ 8 s, and a start with
 * nothing to rebuild ready in ≤ 3 s. `npm install` builds dist in its postinstall (scripts/build.mjs --postinstall), so
 * the first start after it has nothing to compile: this bench removes dist, runs that build step (timed, as npm install
 * would), then starts twice. It also starts once with no dist at all (a build inside `npm start`), for comparison.
 * Ready: the internal listener's /readyz answers 200 (Temporal reachable, the listeners up). Each start gets an empty
 * data folder (a new dev server state) and ports of its own; it is stopped (SIGTERM to its process group) first.
 */
export async function benchColdStart(): Promise<void> {
  const dist = join(ROOT, 'dist');
  rmSync(dist, { recursive: true, force: true });
  const buildStarted = process.hrtime.bigint();
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--postinstall'], { cwd: ROOT, stdio: 'ignore' });
  const installBuildSeconds = Number(process.hrtime.bigint() - buildStarted) / 1e9;
  const afterInstall = await timedStart();
  const warm = await timedStart();
  rmSync(dist, { recursive: true, force: true });
  const noDist = await timedStart();
  report("cold-start: npm install's build step (postinstall) (s)", {
    value: Math.round(installBuildSeconds * 100) / 100,
    cmd: COMMAND,
  });
  report('cold-start: first npm start after npm install (s)', {
    value: afterInstall.seconds,
    firstLogSec: afterInstall.firstLogSeconds,
    target: '≤ 8',
    cmd: COMMAND,
  });
  report('cold-start: npm start, nothing to rebuild (s)', {
    value: warm.seconds,
    firstLogSec: warm.firstLogSeconds,
    target: '≤ 3',
    cmd: COMMAND,
  });
  report('cold-start: npm start with no dist (builds first) (s)', {
    value: noDist.seconds,
    firstLogSec: noDist.firstLogSeconds,
    cmd: COMMAND,
  });
}

/**
 * `npm start` until /readyz answers 200, in seconds; and until main.js logged its first line (npm, the build, and the
 * loading of its modules: the rest is the dev server, the sandbox, the worker and the listeners starting).
 */
async function timedStart(): Promise<{ seconds: number; firstLogSeconds: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'paylater-bench-cold-start-'));
  const [port, internalPort, metricsPort, devPort, uiPort, uiCodecPort, sandboxPort] = await Promise.all(
    Array.from({ length: 7 }, () => freePort()),
  );
  const started = Date.now();
  let mainAt: number | undefined;
  let output = '';
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: true, // its own process group: npm, the shell, node and the dev server are stopped together
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      WORKER_METRICS_PORT: String(metricsPort),
      TEMPORAL_DEV_SERVER_PORT: String(devPort),
      TEMPORAL_UI_PORT: String(uiPort),
      TEMPORAL_UI_CODEC_PORT: String(uiCodecPort),
      SANDBOX_PORT: String(sandboxPort),
      TEMPORAL_DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onData = (d: Buffer) => {
    // main.ts's first line (the prebuilt bundle) marks the end of the build and of npm's own start-up.
    if (mainAt === undefined && d.toString().includes('"name":"paylater"')) mainAt = Date.now();
    output = (output + d.toString()).slice(-8_000);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  try {
    const readyAt = await waitReady(`http://127.0.0.1:${internalPort}/readyz`, child);
    return { seconds: (readyAt - started) / 1000, firstLogSeconds: ((mainAt ?? readyAt) - started) / 1000 };
  } catch (err) {
    throw new Error(`cold-start: ${(err as Error).message}\n${output}`);
  } finally {
    await stop(child);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function waitReady(url: string, child: ChildProcess): Promise<number> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode}) before ready`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return Date.now();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} not 200 within ${READY_TIMEOUT_MS} ms`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // the group is gone already
    }
  };
  signal('SIGTERM');
  const killer = setTimeout(() => signal('SIGKILL'), 20_000);
  await exited;
  clearTimeout(killer);
}
