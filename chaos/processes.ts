import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { Connection } from '@temporalio/client';

/**
 * The stack's processes as the chaos run drives them: spawned with their output in a log file each, killed with
 * a chosen signal, started again. A process that exits without being told to is counted (a process that gives
 * up is a finding of its own) and started again after a second, as a supervisor would.
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

/** Waits until GET `url` answers 2xx. */
export async function waitForHttp(url: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
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
