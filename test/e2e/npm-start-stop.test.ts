import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { freeLoopbackPort as freePort } from '../../src/temporal/free-port';
import { eventually } from '../helpers/temporal';
import { descendants } from '../helpers/process-tree';

/**
 * Start and stop as the README says (docs/decisions/0033-npm-start-loads-while-temporal-boots.md): `npm start` as a
 * person runs it (npm, which runs `node dist/main.js`); SIGTERM or SIGINT to the npm process stops everything it
 * started (node, the Temporal dev server with its Web UI, the sandbox) and frees every port; the development keys are
 * made once, kept in the data folder (0600, folder 0700) and reused at the next start; the banner names the Web UI,
 * /docs, the console and the key's file; and `npm run temporal -- workflow query …` (the README's) answers through the
 * codec with the kept operator key.
 */
const root = join(__dirname, '..', '..');
const run = promisify(execFile);

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Whether nothing listens on `port` any more (it can be bound again). */
const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

beforeAll(() => {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}, 180_000);

describe('npm start and stop, as the README says', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'paylater-start-stop-'));
  let ports: Record<string, number>;
  let env: Record<string, string>;

  beforeAll(async () => {
    ports = {
      PORT: await freePort(),
      INTERNAL_PORT: await freePort(),
      WORKER_METRICS_PORT: await freePort(),
      TEMPORAL_DEV_SERVER_PORT: await freePort(),
      TEMPORAL_UI_PORT: await freePort(),
      TEMPORAL_UI_CODEC_PORT: await freePort(),
      SANDBOX_PORT: await freePort(),
    };
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'info',
      TEMPORAL_DATA_DIR: dataDir,
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    };
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  /** `npm start` until ready and the banner printed. */
  async function npmStart(): Promise<{ npm: ChildProcess; output: () => string; exit: Promise<unknown> }> {
    let output = '';
    const npm = spawn('npm', ['start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    npm.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exit = new Promise((resolve) => npm.once('exit', resolve));
    await eventually(() => (output.includes('Ctrl-C stops everything.') ? true : undefined), 150_000, 200).catch(
      (error: unknown) => {
        npm.kill('SIGKILL');
        throw new Error(`${String(error)}\n--- npm start printed:\n${output.slice(-4000)}`);
      },
    );
    return { npm, output: () => output, exit };
  }

  /** Signals npm alone (not its process group) and checks that everything it started is gone, every port free. */
  async function stopWith(app: { npm: ChildProcess; exit: Promise<unknown> }, signal: NodeJS.Signals) {
    const started = descendants(app.npm.pid!);
    expect(started.length).toBeGreaterThanOrEqual(2); // node dist/main.js and the Temporal dev server, at least
    app.npm.kill(signal);
    await app.exit;
    try {
      await eventually(() => (started.every((pid) => !alive(pid)) ? true : undefined), 30_000, 200);
    } finally {
      for (const pid of started.filter(alive)) process.kill(pid, 'SIGKILL');
    }
    for (const port of Object.values(ports)) expect(await portFree(port)).toBe(true);
  }

  const keysFile = () => join(dataDir, 'development-keys.json');

  it('SIGTERM to npm stops everything; the banner names the Web UI, /docs, the console and the key file; npm run temporal queries through the codec', async () => {
    const app = await npmStart();
    try {
      const internal = `http://localhost:${ports.INTERNAL_PORT}`;
      const banner = app.output();
      expect(banner).toContain(`Temporal Web UI           http://localhost:${ports.TEMPORAL_UI_PORT}`);
      expect(banner).toContain(`API reference             ${internal}/docs`);
      expect(banner).toContain(`Merchant console          ${internal}/console`);
      expect(banner).toContain(`Merchant API key (development, kept in ${keysFile()}`);

      // The keys: made once, owner only, in an owner-only folder, and the banner's.
      expect(statSync(keysFile()).mode & 0o777).toBe(0o600);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      const kept = JSON.parse(readFileSync(keysFile(), 'utf8')) as { merchant: string; operator: string };
      expect(banner).toContain(`dev:${kept.merchant}`);
      expect(banner).toContain(`operator:${kept.operator}`);

      // An application, then the README's query through `npm run temporal` (codec and operator key filled in).
      const merchantReference = `start-stop-${randomUUID()}`;
      const created = await fetch(`${internal}/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${kept.merchant}` },
        body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/return' }),
      });
      expect(created.status).toBe(201);
      const { stdout } = await run(
        'npm',
        [
          'run',
          '--silent',
          'temporal',
          '--',
          'workflow',
          'query',
          '--workflow-id',
          financeApplicationWorkflowId('dev', merchantReference),
          '--type',
          'financeApplicationState',
          '--output',
          'json',
        ],
        { cwd: root, env },
      );
      // Decoded through /codec: the state in plain JSON, naming the reference.
      expect(stdout).toContain(merchantReference);
      expect(stdout).not.toContain('binary/encrypted');
    } finally {
      await stopWith(app, 'SIGTERM');
    }
  }, 300_000);

  it('the next start reuses the kept keys; SIGINT (Ctrl-C) to npm stops everything too', async () => {
    const kept = readFileSync(keysFile(), 'utf8');
    const app = await npmStart();
    try {
      const { merchant } = JSON.parse(kept) as { merchant: string };
      expect(app.output()).toContain(`dev:${merchant}`);
      expect(readFileSync(keysFile(), 'utf8')).toBe(kept);
      // The kept key opens the facade (an unknown reference: 404, not 401).
      const res = await fetch(`http://127.0.0.1:${ports.INTERNAL_PORT}/applications/never-${randomUUID()}`, {
        headers: { authorization: `Bearer ${merchant}` },
      });
      expect(res.status).toBe(404);
    } finally {
      await stopWith(app, 'SIGINT');
    }
  }, 300_000);
});
