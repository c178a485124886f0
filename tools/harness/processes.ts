import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';

export { freeLoopbackPort as freePort } from '../../src/temporal/free-port';

/**
 * How the harnesses (bench, chaos, cluster) start the service's processes and wait for them: one module, so each
 * starts, waits for and stops a process the same way. Two shapes of child: `ManagedProcess`, supervised as the chaos
 * and cluster runs drive it (a log file, killed with a chosen signal, restarted after an unexpected exit), and
 * `startChild`, a process a bench measures (output discarded unless kept, its CPU and memory read from /proc).
 * Test code may import this; this never imports test code.
 */

export interface Exit {
  name: string;
  at: number;
  code: number | null;
  signal: string | null;
}

const everyChild = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of everyChild) child.kill('SIGKILL');
});

/**
 * A process as the chaos and cluster runs drive it: spawned with its output in a log file, killed with a chosen
 * signal, started again. A process that exits without being told to is counted (a process that gives up is a
 * finding of its own) and started again after a second, as a supervisor would.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private expectingExit = false;
  private stopped = false;
  readonly unexpectedExits: Exit[] = [];
  starts = 0;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile: string,
    private readonly cwd: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    const fd = openSync(this.logFile, 'a');
    const child = spawn(this.command, this.args, { cwd: this.cwd, env: this.env, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.starts += 1;
    this.child = child;
    everyChild.add(child);
    this.expectingExit = false;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        everyChild.delete(child);
        resolve();
        if (this.expectingExit || this.stopped) return;
        this.unexpectedExits.push({ name: this.name, at: Date.now(), code, signal });
        setTimeout(() => {
          if (!this.stopped && !this.running) this.start();
        }, 1_000).unref();
      });
    });
  }

  /** Sends `signal` and waits for the exit (SIGKILL after `graceMs`). */
  async kill(signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.expectingExit = true;
    this.child!.kill(signal);
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Stops for good (SIGTERM, then SIGKILL): no restart after this. */
  async stop(graceMs = 15_000): Promise<void> {
    this.stopped = true;
    await this.kill('SIGTERM', graceMs);
  }
}

/** Waits until Temporal at `address` answers describeNamespace on a fresh connection; resolves with Date.now(). */
export async function waitForTemporal(address: string, timeoutMs: number, namespace = 'default'): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.withDeadline(Date.now() + 1_000, () =>
          connection.workflowService.describeNamespace({ namespace }),
        );
        return Date.now();
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`Temporal at ${address} not ready: ${(err as Error).message}`);
      await sleep(100);
    }
  }
}

/** Waits until GET `url` answers 2xx; fails at once when `exited` says its process is gone. */
export async function waitForHttp(url: string, timeoutMs: number, exited?: () => boolean): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited?.()) throw new Error(`${url}: its process exited before it was ready`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return Date.now();
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 2xx within ${timeoutMs} ms`);
    await sleep(100);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A call to the sandbox's control API over HTTP (`/_sandbox/...`): JSON in and out, a non-2xx answer throws. */
export async function sandboxCall<T = unknown>(
  sandboxUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${sandboxUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`sandbox ${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Resident memory of a process (MiB). */
export function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User + system CPU time of a process, in seconds (/proc/<pid>/stat utime and stime, fields 14 and 15). */
export function cpuSeconds(pid: number): number {
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * The whole machine's busy CPU time so far, in seconds (every process: user, nice, system, irq, softirq, steal; from
 * /proc/stat's first line), and its number of CPUs. On a machine that runs only a bench, the difference over a run
 * is what the whole stack cost, Temporal and its database included.
 */
export function machineCpu(): { busySeconds: number; cpus: number } {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const [user, nice, system, , , irq, softirq, steal] = lines[0]!.trim().split(/\s+/).slice(1).map(Number);
  const cpus = lines.filter((l) => /^cpu\d/.test(l)).length;
  return { busySeconds: (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) / TICKS_PER_SECOND, cpus };
}

export interface Child {
  pid: number;
  /** The last lines it wrote to stderr. */
  tail(): string;
  /** The stdout lines `keepLine` kept (startChild's option), the first 50. */
  kept(): string[];
  exited(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs` (default 15 s); resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * `node <entry>` with only `env` (and PATH): no variable of this shell, and no .env (the cwd is a new empty folder).
 * `keepLine`: stdout lines (the service's log) to keep for the report, e.g. its errors; the rest is discarded.
 */
export function startChild(
  name: string,
  entry: string,
  env: Record<string, string>,
  options: { keepLine?: (line: string) => boolean } = {},
): Child {
  const cwd = mkdtempSync(join(tmpdir(), `paylater-harness-${name}-`));
  // Log lines are written (their cost is the service's) and discarded; stderr is kept for a failed start.
  const child = spawn(process.execPath, [entry], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', options.keepLine ? 'pipe' : 'ignore', 'pipe'],
  });
  everyChild.add(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-3_000)));
  const kept: string[] = [];
  if (options.keepLine) {
    let partial = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (kept.length < 50 && options.keepLine!(line)) kept.push(line);
    });
  }
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      everyChild.delete(child);
      rmSync(cwd, { recursive: true, force: true });
      resolve();
    }),
  );
  return {
    pid: child.pid!,
    tail: () => (stderr.trim() ? `${name} (${entry}) stderr: ${stderr.trim()}` : ''),
    kept: () => kept,
    exited: () => child.exitCode !== null || child.signalCode !== null,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Until `url` answers 2xx; fails when the child exits first or `timeoutMs` passes. */
export async function waitReady(child: Child, url: string, timeoutMs = 90_000): Promise<void> {
  await waitForHttp(url, timeoutMs, () => child.exited());
}

/** The bank sandbox as its own process (`node dist/sandbox/server.js`), its account webhooks to `publicUrl`, ready once it answers. */
export async function startSandboxProcess(options: {
  root: string;
  port: number;
  publicUrl: string;
  client: { id: string; secret: string };
  securityHeader: string;
}): Promise<Child> {
  const sandbox = startChild('sandbox', join(options.root, 'dist', 'sandbox', 'server.js'), {
    SANDBOX_PORT: String(options.port),
    SANDBOX_CLIENT_ID: options.client.id,
    SANDBOX_CLIENT_SECRET: options.client.secret,
    SANDBOX_ACCOUNT_WEBHOOK_URL: `${options.publicUrl}/webhooks/accounts`,
    SANDBOX_WEBHOOK_SECURITY_HEADER: options.securityHeader,
    SANDBOX_LOG_LEVEL: 'warn',
  });
  try {
    await waitReady(sandbox, `http://127.0.0.1:${options.port}/_sandbox/token-requests`);
  } catch (err) {
    await sandbox.stop();
    throw err;
  }
  return sandbox;
}
