import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export { freeLoopbackPort as freePort } from '../src/temporal/free-port';

/** How the benches start the service's processes, and what they read of them (Linux /proc). */

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

/** Every child still running: killed if this process exits without stopping them (a crash, process.exit). */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

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
  const cwd = mkdtempSync(join(tmpdir(), `paylater-bench-${name}-`));
  // Log lines are written (their cost is the service's) and discarded; stderr is kept for a failed start.
  const child = spawn(process.execPath, [entry], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', options.keepLine ? 'pipe' : 'ignore', 'pipe'],
  });
  running.add(child);
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
      running.delete(child);
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
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exited()) throw new Error(`${url}: its process exited before it was ready`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The bank sandbox as its own process, its account webhooks to `publicUrl`, ready once it answers. */
export async function startBenchSandbox(options: {
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
