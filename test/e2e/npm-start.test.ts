import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { financeApplicationHandle, startFinanceApplication } from '../../src/client';
import { startSandbox } from '../../src/sandbox';
import { connectTestTemporal, eventually, TEST_PAYLOAD_ENCRYPTION_KEYS } from '../helpers/temporal';

/**
 * The entry points as a person runs them, after `npm run build` (tsc, then the workflow bundle): `npm start`
 * (node dist/main.js), the embedded default: the real dev server with its Web UI, the sandbox, the worker and
 * the app; then SIGTERM leaves no process behind. `npm run worker` (node dist/worker.js), the production
 * worker against the suite's dev server and a sandbox. Both run the workflows from the prebuilt bundle.
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

/** The worker runs workflow code from dist/workflow-bundle.js, and never bundles at start. */
function expectPrebuiltBundle(output: string): void {
  const line = output.split('\n').find((l) => l.includes('workflow code from the prebuilt bundle'));
  expect(line).toBeDefined();
  expect(JSON.parse(line!)).toMatchObject({
    level: 30,
    workflowBundle: join(root, 'dist', 'workflow-bundle.js'),
    inputsSha256: expect.stringMatching(/^[0-9a-f]{12}$/),
  });
  expect(output).not.toContain('Workflow bundle created'); // the SDK's line when webpack runs
}

function run(
  env: Record<string, string>,
  entry = 'dist/main.js',
): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  let output = '';
  const child = spawn(process.execPath, [entry], {
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

beforeAll(() => {
  // The real build script: a build that forgot the bundle fails these tests.
  execFileSync('npm', ['run', '--silent', 'build'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
}, 180_000);

describe('npm start (embedded default)', () => {
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
      LOG_LEVEL: 'info',
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
      expectPrebuiltBundle(app.output());
      // No PAYLOAD_ENCRYPTION_KEYS: the embedded default encrypts with the public development key, and says so.
      expect(app.output()).toMatch(/"level":40.*PAYLOAD_ENCRYPTION_KEYS is unset.*development key, which is public/);

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
      'PAYLOAD_ENCRYPTION_KEYS',
    ]) {
      expect(app.output()).toContain(`- ${variable}: is required when BANK_BASE_URL is set`);
    }
    expect(app.output()).not.toMatch(/\n\s+at /);
  });
});

describe('npm run worker (the production worker)', () => {
  const secret = 'e2e-webhook-hash-secret-0123456789abcdef';
  const workerEnv = (sandboxUrl: string, taskQueue: string): Record<string, string> => ({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS!,
    TASK_QUEUE: taskQueue,
    BANK_BASE_URL: sandboxUrl,
    BANK_AUTH_URL: sandboxUrl,
    BANK_CLIENT_ID: 'e2e-client',
    BANK_CLIENT_SECRET: 'e2e-secret',
    PUBLIC_BASE_URL: 'http://127.0.0.1:9', // no receiver: the sandbox's webhooks fail, polling is enough here
    WEBHOOK_HASH_SECRET: secret,
    // The suite's keys: the test's client (connectTestTemporal) encrypts and decrypts with the same ones.
    PAYLOAD_ENCRYPTION_KEYS: TEST_PAYLOAD_ENCRYPTION_KEYS,
    LOG_LEVEL: 'info',
  });

  it('runs the workflows from the prebuilt bundle, serves an application, and exits 0 on SIGTERM', async () => {
    const sandbox = await startSandbox({ clientId: 'e2e-client', clientSecret: 'e2e-secret' });
    const t = await connectTestTemporal();
    const worker = run(workerEnv(sandbox.url, t.taskQueue), 'dist/worker.js');
    const merchantReference = `e2e-worker-${randomUUID()}`;
    try {
      await eventually(() => (worker.output().includes('"msg":"workers running"') ? true : undefined), 60_000);
      expectPrebuiltBundle(worker.output());

      const started = await startFinanceApplication(
        t.client,
        { merchantReference, application: { redirectUrl: 'https://shop.example/return' } },
        { taskQueue: t.taskQueue },
      );
      expect(started.financeApplicationId).toEqual(expect.any(String));

      worker.child.kill('SIGTERM');
      expect(await worker.exit).toBe(0);
      expect(worker.output()).toContain('"msg":"stopped"');
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
      await financeApplicationHandle(t.client, merchantReference)
        .terminate('e2e test over')
        .catch(() => undefined);
      await t.close();
      await sandbox.close();
    }
  });

  it('refuses to start from a stale bundle, naming npm run build', async () => {
    // Workflow code changed after the build (a compiled file of dist/shared edited), restored afterwards.
    const file = join(root, 'dist', 'shared', 'ids.js');
    const original = readFileSync(file);
    appendFileSync(file, '\n// edited after the build\n');
    try {
      const worker = run(workerEnv('http://127.0.0.1:9', `never-${randomUUID()}`), 'dist/worker.js');
      expect(await worker.exit).toBe(1);
      expect(worker.output()).toMatch(
        /worker: The workflow bundle .*workflow-bundle\.js is stale: .*Run `npm run build`/,
      );
      expect(worker.output()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    } finally {
      writeFileSync(file, original);
    }
  });
});
