import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../helpers/temporal';

/**
 * The embedded default as a person runs it (`npm start` = build, then node dist/main.js): the real dev
 * server with its Web UI, the sandbox, the worker and the app; then SIGTERM leaves no process behind.
 */
const root = join(__dirname, '..', '..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.once('error', reject);
  });
}

function run(env: Record<string, string>): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  let output = '';
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exit };
}

function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start (embedded default)', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: root,
      stdio: 'inherit',
    });
  }, 120_000);

  it('brings up Temporal with its Web UI, the sandbox, the worker and the app; SIGTERM leaves nothing behind', async () => {
    const [port, uiPort, temporalPort, sandboxPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const dataDir = mkdtempSync(join(tmpdir(), 'paylater-e2e-'));
    const app = run({
      PORT: String(port),
      TEMPORAL_UI_PORT: String(uiPort),
      TEMPORAL_DEV_SERVER_PORT: String(temporalPort),
      SANDBOX_PORT: String(sandboxPort),
      TEMPORAL_DATA_DIR: dataDir,
    });
    try {
      await eventually(
        async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined),
        90_000,
        250,
      );
      expect((await fetch(`http://127.0.0.1:${uiPort}/`)).status).toBe(200);
      expect(
        (await fetch(`http://127.0.0.1:${sandboxPort}/oauth/v2/token`, { method: 'POST' })).status,
      ).toBeGreaterThanOrEqual(400);
      // The banner comes once the worker runs too.
      await eventually(() =>
        app.output().includes(`Temporal Web UI           http://localhost:${uiPort}`) ? true : undefined,
      );

      const children = childPids(app.child.pid!);
      expect(children.length).toBeGreaterThan(0); // the dev server
      app.child.kill('SIGTERM');
      expect(await app.exit).toBe(0);
      await eventually(() => (children.every((pid) => !alive(pid)) ? true : undefined), 15_000);
    } finally {
      if (app.child.exitCode === null) app.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('fails fast, naming the address, when TEMPORAL_ADDRESS is unreachable', async () => {
    const app = run({ TEMPORAL_ADDRESS: 'bad:1', PORT: String(await freePort()) });
    expect(await app.exit).not.toBe(0);
    expect(app.output()).toContain('Cannot reach Temporal at bad:1 (TEMPORAL_ADDRESS)');
    expect(app.output()).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });

  it('fails fast, naming each missing variable, when a real bank is configured without credentials', async () => {
    const app = run({ BANK_BASE_URL: 'https://api.bank.example' });
    expect(await app.exit).toBe(78);
    for (const variable of [
      'BANK_AUTH_URL',
      'BANK_CLIENT_ID',
      'BANK_CLIENT_SECRET',
      'PUBLIC_BASE_URL',
      'WEBHOOK_HASH_SECRET',
    ]) {
      expect(app.output()).toContain(`- ${variable}: is required when BANK_BASE_URL is set`);
    }
    expect(app.output()).not.toMatch(/\n\s+at /);
  });
});
