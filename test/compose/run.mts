/**
 * `npm run test:compose`: docker-compose.yml started for real, end to end, on this machine's own engine
 * (scripts/containers/compose-test.sh prepares the engine, the compose CLI and the images, then runs this file with
 * DOCKER_HOST, COMPOSE_CLI and PAYLATER_IMAGE_TAG set). The registry images are replaced by local stand-ins
 * (deploy/containers/compose.local-images.yml); the application image is the Dockerfile's, as built.
 *
 * It brings the stack up under a project of its own (paylater-composetest), waits for every health check, creates a
 * finance application through the merchant API, lets the bank sandbox send its webhooks and decides it, restarts the
 * workers and decides a second one, then `down` (volumes kept) and `up` again and reads both back (Postgres keeps
 * Temporal's data). On the way: the Web UI's codec gateway decodes with its own operator key, the Web UI reads the
 * workflows, Prometheus scrapes every target (the API with its operator key), and only the API's bank-facing 3000 is
 * published beyond the host's loopback. Always ends with `down -v`. Prints the stack's start time and the run's.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PROJECT = 'paylater-composetest';
const composeCli = process.env.COMPOSE_CLI ?? 'docker-compose';
const runStart = performance.now();

/** The host ports docker-compose.yml publishes, and on which address (only 3000 on every interface). */
const PUBLISHED: { port: number; host: string; service: string }[] = [
  { port: 3000, host: '0.0.0.0', service: 'api' },
  { port: 3001, host: '127.0.0.1', service: 'api' },
  { port: 7233, host: '127.0.0.1', service: 'temporal' },
  { port: 8233, host: '127.0.0.1', service: 'temporal-ui' },
  { port: 8234, host: '127.0.0.1', service: 'codec-gateway' },
  { port: 4010, host: '127.0.0.1', service: 'bank-sandbox' },
  { port: 9090, host: '127.0.0.1', service: 'prometheus' },
];
const ONE_SHOT = ['temporal-setup', 'temporal-init'];
/** A failure no further waiting can mend (a container exited): `until` stops at once. */
class FatalError extends Error {}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const b64 = (bytes: number) => randomBytes(bytes).toString('base64');
const alnum = (bytes: number) => b64(bytes).replace(/[=+/]/g, '');
const merchantKey = alnum(32);
const operatorKey = alnum(32);
const prometheusKey = hex(24);
/** The secrets the compose file's header lists, generated for this run only. */
const secrets: Record<string, string> = {
  WEBHOOK_HASH_SECRET: b64(48),
  WEBHOOK_SECURITY_HEADER: `Basic ${b64(32)}`,
  BANK_CLIENT_SECRET: hex(16),
  POSTGRES_PASSWORD: hex(24),
  PAYLOAD_ENCRYPTION_KEYS: `key-1:${b64(32)}`,
  MERCHANT_API_KEYS: `shop:${merchantKey}`,
  OPERATOR_API_KEYS: `ops:${operatorKey}`,
  WEB_UI_OPERATOR_KEY: hex(24),
  PROMETHEUS_OPERATOR_KEY: prometheusKey,
};
const env: NodeJS.ProcessEnv = { ...process.env, ...secrets };

const API = 'http://127.0.0.1:3001';
const BANK = 'http://127.0.0.1:4010';
const figures: [string, string][] = [];

function log(message: string) {
  const t = ((performance.now() - runStart) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[compose-test ${t}s] ${message}\n`);
}

/** Runs the compose CLI on the test's project; its progress output is shown only when it fails. */
function compose(args: string[], options: { allowFail?: boolean } = {}) {
  const files = ['-f', 'docker-compose.yml', '-f', join('deploy', 'containers', 'compose.local-images.yml')];
  const result = spawnSync(composeCli, ['-p', PROJECT, ...files, ...args], {
    cwd: root,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0 && !options.allowFail)
    throw new Error(`compose ${args.join(' ')} exited ${result.status}:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

function docker(args: string[]) {
  const result = spawnSync('docker', args, { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`docker ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
}

const indent = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}\n`)
    .join('');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      if (err instanceof FatalError) throw err;
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs / 1000} s${last ? ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})` : ''}`,
      );
    await sleep(1000);
  }
}

async function http(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { status: res.status, body, headers: res.headers };
}

const merchant = { authorization: `Bearer ${merchantKey}` };

/** Fails at once, naming the port, when a port the compose file publishes is taken on this host. */
async function checkPortsFree() {
  for (const { port, host, service } of PUBLISHED) {
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const server = createServer();
      server.once('error', (err: NodeJS.ErrnoException) => resolve(err));
      server.listen(port, host, () => server.close(() => resolve(undefined)));
    });
    if (error)
      throw new Error(
        `host port ${host}:${port} (docker-compose.yml publishes it for ${service}) is not free: ${error.code}. ` +
          `Another test or stack holds it (ss -ltnp 'sport = :${port}'); stop it and run again.`,
      );
  }
}

interface PsEntry {
  Service: string;
  Name: string;
  State: string;
  Health: string;
  ExitCode: number;
}

function ps(): PsEntry[] {
  return compose(['ps', '--all', '--format', 'json'])
    .split('\n')
    .filter((line) => line.trim())
    .flatMap((line) => JSON.parse(line) as PsEntry | PsEntry[]);
}

/** Waits until every long-running container runs (healthy where it has a check) and the one-shot jobs exited 0. */
async function waitHealthy(what: string) {
  return until(what, 300_000, () => {
    const entries = ps();
    for (const e of entries)
      if (ONE_SHOT.includes(e.Service) ? e.State === 'exited' && e.ExitCode !== 0 : e.State === 'exited')
        throw new FatalError(`${e.Name} exited ${e.ExitCode}`);
    const pending = entries.filter((e) =>
      ONE_SHOT.includes(e.Service)
        ? e.State !== 'exited'
        : e.State !== 'running' || !['', 'healthy'].includes(e.Health),
    );
    const workers = entries.filter((e) => e.Service === 'worker').length;
    return Promise.resolve(pending.length === 0 && workers === 2 && entries.length >= 11 ? entries : undefined);
  });
}

/**
 * Creates an application as a merchant would: a 503 (the start did not complete within the API's 30 s, it goes on)
 * is retried with the same reference, which is idempotent (docs/merchant-api.md); the time it took is logged.
 */
async function createApplication(reference: string) {
  const start = performance.now();
  let created: Awaited<ReturnType<typeof http>>;
  for (let attempt = 1; ; attempt++) {
    created = await http(`${API}/applications`, {
      method: 'POST',
      headers: merchant,
      body: { merchantReference: reference, redirectUrl: 'https://shop.example/return' },
    });
    if (created.status !== 503 || performance.now() - start > 180_000) break;
    log(`${reference}: create answered 503 (attempt ${attempt}), retrying: ${JSON.stringify(created.body)}`);
    await sleep(1000 * Number(created.headers.get('retry-after') ?? 1));
  }
  const seconds = (performance.now() - start) / 1000;
  if (seconds > 10) figures.push([`create ${reference} (retried on 503)`, `${seconds.toFixed(1)} s`]);
  check([200, 201].includes(created.status), `create ${reference}: ${created.status} ${JSON.stringify(created.body)}`);
  const id = (created.body as { financeApplicationId?: string }).financeApplicationId;
  check(id, `create ${reference}: no financeApplicationId in ${JSON.stringify(created.body)}`);
  return id;
}

interface ApplicationView {
  status: string | null;
  done: boolean;
  history: { status: string; source: string }[];
}

async function readApplication(reference: string) {
  const read = await http(`${API}/applications/${reference}`, { headers: merchant });
  check(read.status === 200, `read ${reference}: ${read.status} ${JSON.stringify(read.body)}`);
  return read.body as ApplicationView;
}

/** Creates an application, waits for the sandbox's own webhook (IN_PROGRESS), then has the bank decline it. */
async function financeApplicationFlow(reference: string) {
  const id = await createApplication(reference);
  log(`${reference}: created (bank id ${id}); waiting for the sandbox's webhook`);
  const changed = await until(`${reference} leaves CREATED`, 60_000, async () => {
    const res = await http(`${API}/applications/${reference}?waitForChangeFrom=CREATED&timeout=30s`, {
      headers: merchant,
    });
    return res.headers.get('wait-outcome') === 'changed' ? (res.body as ApplicationView) : undefined;
  });
  check(
    changed.history.some((h) => h.source === 'webhook'),
    `${reference}: no webhook in ${JSON.stringify(changed.history)}`,
  );
  log(`${reference}: ${changed.status} by webhook; the bank declines it`);
  const decided = await http(`${BANK}/_sandbox/applications/${id}/status`, {
    method: 'POST',
    body: { status: 'DECLINED' },
  });
  check(decided.status === 204, `sandbox status switch: ${decided.status}`);
  const final = await until(`${reference} DECLINED`, 60_000, async () => {
    const view = await readApplication(reference);
    return view.status === 'DECLINED' && view.done ? view : undefined;
  });
  const bank = (await http(`${BANK}/_sandbox/applications/${id}`)).body as {
    webhooks?: { trigger: string; outcome: string }[];
  };
  const delivered = (bank.webhooks ?? []).filter((w) => w.outcome === 'delivered').map((w) => w.trigger);
  check(delivered.includes('status:DECLINED'), `${reference}: the bank's deliveries ${JSON.stringify(bank.webhooks)}`);
  log(`${reference}: DECLINED, done (webhooks delivered: ${delivered.join(', ')})`);
  return final;
}

/** The bank's account webhooks (WEBHOOK_SECURITY_HEADER) reach the API: a consent refresh hears from each bank. */
async function consentRefreshFlow(consentId: string) {
  const started = await http(`${API}/consents/${consentId}/refresh`, { method: 'POST', headers: merchant, body: {} });
  check(started.status === 202, `consent refresh: ${started.status} ${JSON.stringify(started.body)}`);
  const progress = await until(`consent ${consentId}: a bank reports`, 60_000, async () => {
    const res = await http(`${API}/consents/${consentId}/refresh`, { headers: merchant });
    const body = res.body as { banks?: { bankCode: string; succeeded?: boolean }[] };
    return res.status === 200 && (body.banks ?? []).length > 0 ? body : undefined;
  });
  log(`consent ${consentId}: banks reported by account webhook: ${progress.banks!.map((b) => b.bankCode).join(', ')}`);
}

async function codecGateway() {
  // The gateway adds its operator key (the API's operator web-ui); no key comes from here.
  const res = await http('http://127.0.0.1:8234/codec/decode', { method: 'POST', body: { payloads: [] } });
  check(res.status === 200, `codec gateway: ${res.status} ${JSON.stringify(res.body)}`);
  const other = await http('http://127.0.0.1:8234/metrics');
  check(other.status === 404, `codec gateway serves only /codec: /metrics gave ${other.status}`);
  const direct = await http(`${API}/codec/decode`, { method: 'POST', body: { payloads: [] } });
  check(direct.status === 401, `/codec without a key: ${direct.status}`);
  log('codec gateway: decodes with its own operator key, 404 elsewhere; /codec without a key is 401');
}

async function webUi(reference: string) {
  const page = await http('http://127.0.0.1:8233/');
  check(page.status === 200, `Web UI: ${page.status}`);
  const workflows = await until('the Web UI lists the workflows', 60_000, async () => {
    const res = await http('http://127.0.0.1:8233/api/v1/namespaces/default/workflows');
    return res.status === 200 && JSON.stringify(res.body).includes(reference) ? res.body : undefined;
  });
  check(workflows, 'Web UI');
  log(`Web UI: serves its page and lists finance-application:shop:${reference} from Temporal`);
}

async function prometheusTargets() {
  const expected: Record<string, number> = {
    'paylater-api': 1,
    'paylater-worker': 2,
    'temporal-server': 1,
    prometheus: 1,
  };
  const targets = await until('Prometheus: every target up', 120_000, async () => {
    const res = await http('http://127.0.0.1:9090/api/v1/targets?state=active');
    const active = (res.body as { data?: { activeTargets?: { labels: { job: string }; health: string }[] } }).data
      ?.activeTargets;
    if (!active) return undefined;
    const up = (job: string) => active.filter((t) => t.labels.job === job && t.health === 'up').length;
    return Object.entries(expected).every(([job, n]) => up(job) === n) && active.length === 5 ? active : undefined;
  });
  log(`Prometheus: ${targets.length} targets up (${Object.keys(expected).join(', ')}; the API with its operator key)`);
}

/** The running containers' port bindings: only api's 3000 beyond the loopback, the rest on 127.0.0.1. */
function checkPublications() {
  const ids = compose(['ps', '-q']).split('\n').filter(Boolean);
  const inspected = JSON.parse(docker(['inspect', ...ids])) as {
    Config: { Labels: Record<string, string> };
    NetworkSettings: { Ports: Record<string, { HostIp: string; HostPort: string }[] | null> };
  }[];
  const bindings = inspected.flatMap((c) =>
    Object.entries(c.NetworkSettings.Ports ?? {}).flatMap(([port, binds]) =>
      (binds ?? []).map((b) => ({
        service: c.Config.Labels['com.docker.compose.service']!,
        port,
        hostIp: b.HostIp,
        hostPort: b.HostPort,
      })),
    ),
  );
  const beyond = bindings.filter((b) => b.hostIp !== '127.0.0.1');
  check(
    beyond.length >= 1 && beyond.every((b) => b.service === 'api' && b.port === '3000/tcp' && b.hostPort === '3000'),
    `published beyond the loopback: ${JSON.stringify(beyond)}`,
  );
  for (const { port, service } of PUBLISHED.filter((p) => p.port !== 3000))
    check(
      bindings.some((b) => b.service === service && b.hostPort === String(port) && b.hostIp === '127.0.0.1'),
      `${service} is not published on 127.0.0.1:${port}: ${JSON.stringify(bindings)}`,
    );
  check(!bindings.some((b) => b.service === 'postgres' || b.service === 'worker'), 'postgres or a worker is published');
  log(`publications: ${bindings.map((b) => `${b.service} ${b.hostIp}:${b.hostPort}`).join(', ')}`);
}

async function up(label: string) {
  const start = performance.now();
  compose(['up', '--detach', '--no-build', '--quiet-pull']);
  await waitHealthy(label);
  const seconds = (performance.now() - start) / 1000;
  figures.push([label, `${seconds.toFixed(1)} s`]);
  log(`${label}: every service healthy in ${seconds.toFixed(1)} s`);
}

let started = false;
function cleanUp() {
  if (!started || process.env.COMPOSE_TEST_KEEP === '1') return;
  started = false;
  log('down -v');
  compose(['down', '--volumes', '--timeout', '20'], { allowFail: true });
}

async function main() {
  await checkPortsFree();
  compose(['config', '--quiet']);
  // Left from an interrupted run: gone before starting.
  compose(['down', '--volumes', '--timeout', '5'], { allowFail: true });
  started = true;
  log('up (stand-in images, the application image as built)');
  await up('stack start (up to healthy)');

  const runId = hex(3);
  const first = `compose-${runId}-1`;
  await financeApplicationFlow(first);
  await consentRefreshFlow(`c-${runId}`);
  await codecGateway();
  await webUi(first);
  await prometheusTargets();
  checkPublications();

  log('restart worker (both replicas)');
  const restart = performance.now();
  compose(['restart', 'worker']);
  await waitHealthy('workers healthy after restart');
  figures.push(['worker restart (to healthy)', `${((performance.now() - restart) / 1000).toFixed(1)} s`]);
  const second = `compose-${runId}-2`;
  await financeApplicationFlow(second);

  log('down (volumes kept), then up');
  const down = performance.now();
  compose(['down', '--timeout', '20']);
  figures.push(['down', `${((performance.now() - down) / 1000).toFixed(1)} s`]);
  await up('stack restart on kept volumes (up to healthy)');
  for (const reference of [first, second]) {
    const view = await readApplication(reference);
    check(view.status === 'DECLINED' && view.done, `${reference} after down/up: ${JSON.stringify(view)}`);
  }
  log(`after down/up: ${first} and ${second} read back DECLINED, done (Postgres volume kept)`);
  // And the restarted stack takes new work.
  await financeApplicationFlow(`compose-${runId}-3`);
  await prometheusTargets();
  checkPublications();
}

process.on('SIGINT', () => {
  cleanUp();
  process.exit(130);
});
process.on('SIGTERM', () => {
  cleanUp();
  process.exit(143);
});

try {
  await main();
  figures.push(['whole run', `${((performance.now() - runStart) / 1000).toFixed(1)} s`]);
  log('PASS');
} catch (err) {
  process.exitCode = 1;
  log(`FAIL: ${err instanceof Error ? err.message : String(err)}`);
  if (started) {
    log('state and logs of the stack:');
    process.stdout.write(indent(compose(['ps', '--all'], { allowFail: true })));
    process.stdout.write(indent(compose(['logs', '--no-color', '--tail', '40'], { allowFail: true })));
  }
  figures.push(['whole run (failed)', `${((performance.now() - runStart) / 1000).toFixed(1)} s`]);
} finally {
  cleanUp();
  for (const [what, value] of figures) process.stdout.write(`  ${what.padEnd(48)} ${value}\n`);
}
