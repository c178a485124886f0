import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { financeApplicationHandle, startFinanceApplication } from '../../src/client';
import { findTemporalCli } from '../../src/temporal/binaries';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { startSandbox } from '../../src/sandbox';
import {
  deriveCallbackSigningSecret,
  DEVELOPMENT_SIGNING_MASTER_SECRET,
} from '../../src/security/merchant-signing-secret';
import { connectTestTemporal, eventually, TEST_PAYLOAD_ENCRYPTION_KEYS } from '../helpers/temporal';
import { freeLoopbackPort as freePort } from '../../src/temporal/free-port';
import { TEST_MERCHANT } from '../helpers/merchants';
import { childPids } from '../helpers/process-tree';

/**
 * The entry points as a person runs them, after `npm run build` (tsc, then the workflow bundle): `npm start`
 * (node dist/main.js), the embedded default: the real dev server with its Web UI, the sandbox, the worker and
 * the app; then SIGTERM leaves no process behind. `npm run worker` (node dist/worker.js), the production
 * worker against the suite's dev server and a sandbox. Both run the workflows from the prebuilt bundle.
 */
const root = join(__dirname, '..', '..');

/** The worker runs workflow code from dist/workflow-bundle.js, and never bundles at start. */
function expectPrebuiltBundle(output: string): void {
  const line = output.split('\n').find((l) => l.includes('workflow code from the prebuilt bundle'));
  expect(line).toBeDefined();
  expect(JSON.parse(line!)).toMatchObject({
    level: 30,
    workflowBundle: join(root, 'dist', 'workflow-bundle.js'),
    buildId: expect.stringMatching(/^wf-[0-9a-f]{16}$/),
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
    // WORKER_METRICS_PORT 0: a free port, so runs beside another stack (or another test) never collide on 9464.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'warn',
      WORKER_METRICS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exit };
}

/** The exit code, with the process's last output in the failure message when it is not the expected one. */
async function exitedWith(app: { output: () => string; exit: Promise<number | null> }, expected: number) {
  const code = await app.exit;
  if (code !== expected)
    throw new Error(`exit ${code}, expected ${expected}; its last output:\n${app.output().slice(-6000)}`);
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
  it('brings up Temporal with its Web UI, the sandbox, the worker and both listeners; SIGTERM leaves nothing behind', async () => {
    const [port, internalPort, uiPort, temporalPort, sandboxPort, uiCodecPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const dataDir = mkdtempSync(join(tmpdir(), 'paylater-e2e-'));
    const app = run({
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      TEMPORAL_UI_PORT: String(uiPort),
      TEMPORAL_UI_CODEC_PORT: String(uiCodecPort),
      TEMPORAL_DEV_SERVER_PORT: String(temporalPort),
      SANDBOX_PORT: String(sandboxPort),
      TEMPORAL_DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    });
    try {
      await eventually(
        async () => ((await fetch(`http://127.0.0.1:${internalPort}/readyz`)).status === 200 ? true : undefined),
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
      // The local merchant's callback secret (derived from the development master, generation 1 in a new data
      // folder): printed once in the banner, in no log line.
      const devSecret = deriveCallbackSigningSecret(DEVELOPMENT_SIGNING_MASTER_SECRET, 'dev', 1);
      const withSecret = app
        .output()
        .split('\n')
        .filter((l) => l.includes(devSecret));
      expect(withSecret).toEqual([
        expect.stringMatching(/^ {2}Callback signing secret {3}whsec_\S+ {3}\(development only; signs for dev\)$/),
      ]);
      expect(app.output()).toContain(
        'callbacks of merchant dev are signed with secrets derived from the public development master',
      );

      // Both listeners printed, and the development key kept in the data folder (MERCHANT_API_KEYS unset), once.
      const output = app.output();
      expect(output).toContain(`Public listener (bank)    http://localhost:${port}`);
      expect(output).toContain(`Internal listener         http://localhost:${internalPort}`);
      const key = /^ {4}dev:(\S+)$/m.exec(output)?.[1];
      expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(output).toContain(`Merchant API key (development, kept in ${join(dataDir, 'development-keys.json')}`);
      // Beside it, the operator key (OPERATOR_API_KEYS unset), for /codec.
      const operatorKey = /^ {4}operator:(\S+)$/m.exec(output)?.[1];
      expect(operatorKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(operatorKey).not.toBe(key);
      expect(output).toContain(`Operator API key (development, kept in ${join(dataDir, 'development-keys.json')}`);
      // Printed in the banner, never in a log line.
      const logLines = output.split('\n').filter((l) => l.startsWith('{'));
      expect(logLines.length).toBeGreaterThan(0);
      expect(logLines.filter((l) => l.includes(key!) || l.includes(operatorKey!))).toEqual([]);

      // The facade: on the internal listener, with the key; 401 without; 404 on the public listener.
      const merchantReference = `e2e-${randomUUID()}`;
      const create = (base: number, headers: Record<string, string>) =>
        fetch(`http://127.0.0.1:${base}/applications`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/return' }),
        });
      expect((await create(internalPort, {})).status).toBe(401);
      expect((await create(port, { authorization: `Bearer ${key}` })).status).toBe(404);
      // The public listener's /readyz (for its load balancer) says only whether the process takes webhooks.
      expect(await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()).toEqual({ status: 'ready' });
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const created = await create(internalPort, { authorization: `Bearer ${key}` });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ merchantReference, financeApplicationId: expect.any(String) });
      // /codec: the operator key decodes; the merchant key is refused as an unknown one (401), no key 401.
      const decode = (headers: Record<string, string>) =>
        fetch(`http://127.0.0.1:${internalPort}/codec/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: '{"payloads":[]}',
        });
      expect((await decode({ authorization: `Bearer ${operatorKey}` })).status).toBe(200);
      expect((await decode({ authorization: `Bearer ${key}` })).status).toBe(401);
      expect((await decode({})).status).toBe(401);
      // The Web UI's Origin opens nothing there (anyone can send it) …
      const uiOrigin = `http://localhost:${uiPort}`;
      expect((await decode({ origin: uiOrigin })).status).toBe(401);
      // … the UI decodes through its own gateway on 127.0.0.1, which it was given as its codec endpoint.
      const settings = await (await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`)).text();
      expect(settings).toContain(`http://localhost:${uiCodecPort}/codec`);
      const viaGateway = await fetch(`http://127.0.0.1:${uiCodecPort}/codec/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: uiOrigin, 'x-namespace': 'default' },
        body: '{"payloads":[]}',
      });
      expect(viaGateway.status).toBe(200);
      expect(viaGateway.headers.get('access-control-allow-origin')).toBe(uiOrigin);
      expect(output).toContain(`(decodes through http://localhost:${uiCodecPort}/codec, loopback only)`);
      // The worker's own listener (WORKER_METRICS_PORT=0 here: the port the banner prints): the SDK's series
      // through the Runtime's exporter, the worker's business metrics, and health.
      // Its workers joined the deployment as the build of dist's workflow bundle, and made it current.
      expect(app.output()).toMatch(/Worker build +paylater\.wf-[0-9a-f]{16} +\(current version\)/);
      const metricsPort = /Worker metrics, health +http:\/\/localhost:(\d+)\/metrics/.exec(app.output())?.[1];
      expect(metricsPort).toMatch(/^\d+$/);
      const scrape = await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        return text.includes('paylater_finance_applications_started_total') ? text : undefined;
      });
      expect(scrape).toMatch(/^temporal_workflow_task_schedule_to_start_latency_bucket\{/m);
      expect(scrape).toMatch(/^paylater_bank_token_requests_total\{outcome="ok"\} [1-9]/m);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status).toBe(200);
      // Every listener but the public one binds 127.0.0.1 (INTERNAL_HOST, WORKER_METRICS_HOST unset): 127.0.0.2, also
      // loopback, reaches a wildcard bind and not those (as another host's address would not).
      const answers = (port: number | string) =>
        fetch(`http://127.0.0.2:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
          (r) => r.status,
          () => 'refused',
        );
      expect({
        public: await answers(port),
        internal: await answers(internalPort),
        worker: await answers(metricsPort!),
        sandbox: await answers(sandboxPort),
        uiCodec: await answers(uiCodecPort),
      }).toEqual({ public: 200, internal: 'refused', worker: 'refused', sandbox: 'refused', uiCodec: 'refused' });
      // No PAYLOAD_ENCRYPTION_KEYS: the embedded default encrypts with the public development key, and says so.
      expect(app.output()).toMatch(/"level":40.*PAYLOAD_ENCRYPTION_KEYS is unset.*development key, which is public/);

      const children = childPids(app.child.pid!);
      expect(children.length).toBeGreaterThan(0); // the dev server
      app.child.kill('SIGTERM');
      await exitedWith(app, 0);
      await eventually(() => (children.every((pid) => !alive(pid)) ? true : undefined), 15_000);
      // In order: the listeners drain (their long-polls need the worker), then the worker, then the rest.
      const stopping = app.output();
      const steps = [
        '"msg":"shutting down"',
        'listeners closed to new connections',
        '"state":"STOPPING"',
        '"msg":"stopped"',
      ];
      const at = steps.map((line) => stopping.indexOf(line));
      expect(at.every((i, n) => i >= 0 && (n === 0 || i > at[n - 1]!))).toBe(true);
    } finally {
      if (app.child.exitCode === null) app.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an application halfway through, Ctrl-C, npm start again: the application goes on to its end', async () => {
    const [port, internalPort, uiPort, temporalPort, sandboxPort, uiCodecPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const dataDir = mkdtempSync(join(tmpdir(), 'paylater-restart-'));
    const key = `restart-merchant-key-${randomUUID()}`;
    const env = {
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      TEMPORAL_UI_PORT: String(uiPort),
      TEMPORAL_UI_CODEC_PORT: String(uiCodecPort),
      TEMPORAL_DEV_SERVER_PORT: String(temporalPort),
      SANDBOX_PORT: String(sandboxPort),
      TEMPORAL_DATA_DIR: dataDir,
      // The same key across both runs (a generated one changes at each start).
      MERCHANT_API_KEYS: `restart-shop:${key}`,
    };
    const facade = (path: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${internalPort}${path}`, {
        ...init,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      });
    // A first start on an empty SQLite file creates Temporal's schema: on a loaded CI machine that took over 90 s
    // once. When it does not come up, the failure shows what the processes printed.
    const ready = () =>
      eventually(
        async () => ((await fetch(`http://127.0.0.1:${internalPort}/readyz`)).status === 200 ? true : undefined),
        150_000,
        250,
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}\n--- npm start printed:\n${app.output().slice(-4000)}`);
      });
    const merchantReference = `restart-${randomUUID()}`;
    const read = async () =>
      (await (await facade(`/applications/${merchantReference}`)).json()) as {
        status: string;
        done: boolean;
        financeApplicationId: string;
        history: { status: string }[];
      };
    let app = run(env);
    try {
      await ready();
      const created = await facade('/applications', {
        method: 'POST',
        body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/return' }),
      });
      // The answer's body with its status: a 503's problem names its cause.
      expect({
        status: created.status,
        body: created.status === 201 ? undefined : `${await created.text()}\n${app.output().slice(-3000)}`,
      }).toEqual({
        status: 201,
        body: undefined,
      });
      // Halfway: the embedded bank (a step every 10 s) has moved it on, not to its end.
      const halfway = await eventually(
        async () => {
          const s = await read();
          return s.status === 'IN_PROGRESS' || s.status === 'APPROVED' ? s : undefined;
        },
        60_000,
        250,
      );
      expect(halfway.done).toBe(false);

      app.child.kill('SIGINT'); // Ctrl-C
      await exitedWith(app, 0);
      // The bank's memory, beside Temporal's SQLite file, for the owner only.
      const stateFile = join(dataDir, 'bank-sandbox.json');
      expect(statSync(stateFile).mode & 0o777).toBe(0o600);
      expect(readFileSync(stateFile, 'utf8')).toContain(halfway.financeApplicationId);

      app = run(env);
      await ready();
      const end = await eventually(
        async () => {
          const s = await read();
          return s.done ? s : undefined;
        },
        90_000,
        500,
      );
      expect(end).toMatchObject({ status: 'COMPLETED', financeApplicationId: halfway.financeApplicationId });
      // The bank knew it all along: its own record went on to COMPLETED, and no status read met a 404.
      const truth = (await (
        await fetch(`http://127.0.0.1:${sandboxPort}/_sandbox/applications/${halfway.financeApplicationId}`)
      ).json()) as { status: string; statusHistory: { status: string }[] };
      expect(truth.statusHistory.map((h) => h.status)).toEqual([
        'CREATED',
        'IN_PROGRESS',
        'APPROVED',
        'SIGNED',
        'COMPLETED',
      ]);
      expect(app.output()).not.toMatch(/BankRejected|HTTP 404/);
      app.child.kill('SIGINT');
      await exitedWith(app, 0);
    } finally {
      if (app.child.exitCode === null) app.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 420_000);

  it('waits for an unreachable TEMPORAL_ADDRESS, naming it, and stops cleanly on SIGTERM', async () => {
    const app = run({
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      PORT: String(await freePort()),
      INTERNAL_PORT: String(await freePort()),
    });
    await eventually(() => (app.output().includes('waiting for Temporal at 127.0.0.1:1') ? true : undefined), 30_000);
    expect(app.child.exitCode).toBeNull();
    app.child.kill('SIGTERM');
    await exitedWith(app, 0);
    expect(app.output()).not.toMatch(/\n\s+at /); // messages, never a stack trace
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
      'MERCHANT_API_KEYS',
      'OPERATOR_API_KEYS',
      'WEBHOOK_SECURITY_HEADER',
      'PAYLOAD_ENCRYPTION_KEYS',
    ]) {
      expect(app.output()).toContain(`- ${variable}: is required when BANK_BASE_URL is set`);
    }
    expect(app.output()).toContain('WEBHOOK_SECURITY_HEADER_WAIVED=true');
    expect(app.output()).not.toMatch(/\n\s+at /);
  });
});

describe('npm run api (the two listeners alone)', () => {
  it('serves the receiver on PORT and the facade behind a key on INTERNAL_PORT, prints both, exits 0 on SIGTERM', async () => {
    const [port, internalPort] = [await freePort(), await freePort()];
    const key = `e2e-merchant-key-${randomUUID()}`;
    const api = run(
      {
        TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS!,
        PORT: String(port),
        INTERNAL_PORT: String(internalPort),
        MERCHANT_API_KEYS: `e2e-shop:${key}`,
        LOG_LEVEL: 'info',
      },
      'dist/api/server.js',
    );
    try {
      await eventually(() => (api.output().includes('"msg":"API listening') ? true : undefined), 60_000);
      expect(api.output()).toContain(`http://localhost:${port}`);
      expect(api.output()).toContain(`http://localhost:${internalPort}`);
      expect(api.output()).toContain('"merchantKeys":["e2e-shop"]');
      expect(api.output()).not.toContain(key);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${internalPort}/readyz`)).status).toBe(200);
      const unknown = `/applications/never-${randomUUID()}`;
      expect((await fetch(`http://127.0.0.1:${internalPort}${unknown}`)).status).toBe(401);
      expect(
        (await fetch(`http://127.0.0.1:${internalPort}${unknown}`, { headers: { authorization: `Bearer ${key}` } }))
          .status,
      ).toBe(404);
      expect(
        (await fetch(`http://127.0.0.1:${port}${unknown}`, { headers: { authorization: `Bearer ${key}` } })).status,
      ).toBe(404);
      expect((await fetch(`http://127.0.0.1:${port}/webhooks/accounts`, { method: 'POST', body: '{}' })).status).toBe(
        415,
      );
      api.child.kill('SIGTERM');
      await exitedWith(api, 0);
      expect(api.output()).not.toContain(key);
    } finally {
      if (api.child.exitCode === null) api.child.kill('SIGKILL');
    }
  });
});

describe('npm run worker (the production worker)', () => {
  const secret = 'e2e-webhook-hash-secret-0123456789abcdef';
  const workerEnv = (sandboxUrl: string, taskQueue: string): Record<string, string> => ({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS!,
    TASK_QUEUE: taskQueue,
    // A Worker Deployment of its own: on the suite's shared server another test's build may be current in the default.
    WORKER_DEPLOYMENT_NAME: `e2e-${taskQueue}`,
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
      // The start line names the merchants the worker knows (MERCHANTS_FILE's entries override the globals it shows).
      const running = worker
        .output()
        .split('\n')
        .find((line) => line.includes('"msg":"workers running"'));
      expect((JSON.parse(running!) as { merchants?: unknown }).merchants).toEqual(expect.any(Array));

      const started = await startFinanceApplication(
        t.client,
        TEST_MERCHANT,
        { merchantReference, application: { redirectUrl: 'https://shop.example/return' } },
        { taskQueue: t.taskQueue },
      );
      expect(started.financeApplicationId).toEqual(expect.any(String));

      worker.child.kill('SIGTERM');
      await exitedWith(worker, 0);
      expect(worker.output()).toContain('"msg":"stopped"');
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
      await financeApplicationHandle(t.client, TEST_MERCHANT, merchantReference)
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

/**
 * Start in any order: the production worker and API started while nothing listens at TEMPORAL_ADDRESS
 * keep trying, say what they wait for, answer not-ready, and serve once Temporal comes up.
 */
describe('start in any order', () => {
  it('a worker and an API started before Temporal wait, answer not-ready, and serve once it is up', async () => {
    const cliPath = findTemporalCli(process.env);
    expect(cliPath).toBeDefined();
    const [temporalPort, uiPort, apiPort, internalPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const key = `order-merchant-key-${randomUUID()}`;
    const sandbox = await startSandbox({ clientId: 'order-client', clientSecret: 'order-secret' });
    const dataDir = mkdtempSync(join(tmpdir(), 'start-order-'));
    const taskQueue = `start-order-${randomUUID()}`;
    const env = {
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TASK_QUEUE: taskQueue,
      BANK_BASE_URL: sandbox.url,
      BANK_AUTH_URL: sandbox.url,
      BANK_CLIENT_ID: 'order-client',
      BANK_CLIENT_SECRET: 'order-secret',
      PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
      WEBHOOK_HASH_SECRET: 'start-order-webhook-hash-secret-0123456789',
      PORT: String(apiPort),
      INTERNAL_PORT: String(internalPort),
      MERCHANT_API_KEYS: `order-shop:${key}`,
      OPERATOR_API_KEYS: `order-operator:operator-key-${randomUUID()}`,
      WEBHOOK_SECURITY_HEADER_WAIVED: 'true',
      PAYLOAD_ENCRYPTION_KEYS: TEST_PAYLOAD_ENCRYPTION_KEYS,
      LOG_LEVEL: 'info',
    };
    const worker = run(env, 'dist/worker.js');
    const api = run(env, 'dist/api/server.js');
    let temporal: DevServer | undefined;
    const apiUrl = `http://127.0.0.1:${internalPort}`;
    try {
      // Both wait, saying for what; neither exits.
      for (const p of [worker, api]) {
        await eventually(
          () => (p.output().includes(`waiting for Temporal at 127.0.0.1:${temporalPort}`) ? true : undefined),
          30_000,
        );
      }
      const notReady = await fetch(`${apiUrl}/readyz`);
      expect(notReady.status).toBe(503);
      await notReady.arrayBuffer();
      expect(worker.child.exitCode).toBeNull();
      expect(api.child.exitCode).toBeNull();

      temporal = await startDevServer({
        cliPath: cliPath!,
        port: temporalPort,
        uiPort,
        dataDir,
        cwd: root,
        namespace: 'default',
        logger: pino({ level: 'silent' }),
      });

      await eventually(async () => ((await fetch(`${apiUrl}/readyz`)).status === 200 ? true : undefined), 30_000);
      await eventually(() => (worker.output().includes('"msg":"workers running"') ? true : undefined), 30_000);
      const res = await fetch(`${apiUrl}/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ merchantReference: `order-${randomUUID()}`, redirectUrl: 'https://shop.example/r' }),
      });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ financeApplicationId: expect.any(String) });
      for (const p of [worker, api])
        expect(p.output()).toMatch(/Temporal at 127\.0\.0\.1:\d+ \(namespace default\) is reachable/);
    } finally {
      for (const p of [worker, api]) p.child.kill('SIGTERM');
      await Promise.all([worker.exit, api.exit]);
      await temporal?.stop();
      await sandbox.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
