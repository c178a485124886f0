import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import pino from 'pino';
import { Registry } from 'prom-client';
import { awaitFinanceApplication, startFinanceApplication } from '../../src/client';
import {
  callbackEventLabel,
  HTTP_METHODS,
  methodLabel,
  METRIC_PREFIX,
  OTHER_LABEL,
} from '../../src/shared/metric-names';
import { collectProcessMetrics } from '../../src/telemetry/process-metrics';
import { snakeCaseLabelNames, startWorkerMetricsServer, type WorkerMetricsServer } from '../../src/worker/metrics';
import { TEST_MERCHANT } from '../helpers/merchants';
import { findPromtool, requirePromtool, parseExposition, sumOf, type Sample } from '../helpers/prometheus';
import { startTestStack, type TestStack } from '../helpers/stack';
import { installWorkerRuntime } from '../helpers/worker-runtime';
import { eventually } from '../helpers/temporal';

/**
 * Both processes' `/metrics` as Prometheus reads them: the API's internal listener and the worker's
 * WORKER_METRICS_PORT (the Runtime's exporter and prom-client, process metrics included) pass
 * `promtool check metrics` with nothing to say, after traffic that includes methods and paths no route knows.
 * The service's series carry one prefix and snake_case labels, and a client cannot grow the label sets.
 * promtool comes from `npm run toolchain`; without it the promtool checks are skipped, saying how to get it, and FAIL where PAYLATER_REQUIRE_TOOLS is set (.ci/run).
 */
const promtool = findPromtool();
const withPromtool = requirePromtool('`promtool check metrics` of /metrics');

function checkMetrics(text: string): { status: number | null; output: string } {
  if (!promtool)
    throw new Error('promtool is not installed: run `npm run toolchain` (Debian: apt-get install prometheus)');
  const result = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

/** Methods a client may send that Node's parser accepts: ours, WebDAV's and a cache's. */
const CLIENT_METHODS = [...HTTP_METHODS, 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE', 'REPORT', 'SEARCH', 'COPY', 'MOVE'];

/** One request with any method (fetch refuses some), its answer's status. */
function send(url: string, method: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

const LABEL_NAME = /^[a-z_][a-z0-9_]*$/;
const OWN_PREFIXES = [METRIC_PREFIX, 'temporal_', 'process_', 'nodejs_'];

describe('/metrics of the API and the worker (promtool check metrics)', () => {
  let stack: TestStack;
  let server: WorkerMetricsServer;
  let workerUrl: string;

  beforeAll(async () => {
    const runtimeMetricsUrl = await installWorkerRuntime();
    stack = await startTestStack();
    // As createWorkerMetrics() builds it in a worker process: the activities' metrics and the process's.
    const processMetrics = new Registry();
    collectProcessMetrics(processMetrics);
    server = await startWorkerMetricsServer({
      port: 0,
      host: '127.0.0.1',
      registry: Registry.merge([stack.workerMetrics.registry, processMetrics]),
      runtimeMetricsUrl,
      logger: pino({ level: 'silent' }),
    });
    server.setWorkers(stack.worker());
    workerUrl = `http://127.0.0.1:${server.port}`;

    // One application to its end: the workflows' counters and histogram get series (with the SDK's labels).
    const ref = `promtool-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript(
      { steps: ['IN_PROGRESS', 'COMPLETED'].map((status) => ({ status, afterMs: 300 })) },
      { merchantReference: ref },
    );
    await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' } },
      { taskQueue: stack.t.taskQueue },
    );
    await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    await eventually(async () =>
      sumOf(await scrape(workerUrl), 'paylater_finance_applications_finished_total') > 0 ? true : undefined,
    );
  });
  afterAll(async () => {
    await server?.close();
    await stack?.close();
  });

  async function text(url: string): Promise<string> {
    // The API's /metrics is an operator's; the worker's listener takes no key and ignores it.
    const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${stack.operatorKey}` } });
    expect(res.status).toBe(200);
    return res.text();
  }
  const scrape = async (url: string): Promise<Sample[]> => parseExposition(await text(url));
  const apiUrl = () => stack.internalUrl;

  /** The HTTP histogram's series (one per label set). */
  const httpSeries = (samples: Sample[]) =>
    samples.filter((s) => s.name === `${METRIC_PREFIX}http_request_duration_seconds_count`);

  it('counts a request with an unknown method or on an unknown path under `other`', async () => {
    const unknownPath = `/no-such-route/${randomUUID()}`;
    expect(await send(`${stack.publicUrl}${unknownPath}`, 'PROPFIND')).toBe(404);
    expect(await send(`${apiUrl()}${unknownPath}`, 'GET')).toBe(404);
    const series = httpSeries(await scrape(apiUrl()));
    expect(series).toContainEqual(
      expect.objectContaining({
        labels: { listener: 'public', method: OTHER_LABEL, route: OTHER_LABEL, status: '404' },
      }),
    );
    expect(series).toContainEqual(
      expect.objectContaining({ labels: { listener: 'internal', method: 'GET', route: OTHER_LABEL, status: '404' } }),
    );
    // A matched route is named by its pattern, not its path.
    expect(await send(`${apiUrl()}/healthz`, 'GET')).toBe(200);
    expect(httpSeries(await scrape(apiUrl()))).toContainEqual(
      expect.objectContaining({ labels: { listener: 'internal', method: 'GET', route: '/healthz', status: '200' } }),
    );
  });

  it('keeps the HTTP label sets bounded whatever methods and paths clients send', async () => {
    const before = httpSeries(await scrape(apiUrl())).length;
    const tokens: string[] = [];
    for (let i = 0; i < 50; i++) {
      const token = randomUUID();
      tokens.push(token);
      const method = CLIENT_METHODS[i % CLIENT_METHODS.length]!;
      const base = i % 2 === 0 ? stack.publicUrl : apiUrl();
      const path = [`/${token}`, `/applications/${token}/x`, `/webhooks/${token}`, `/metrics/${token}`][i % 4]!;
      await send(`${base}${path}`, method);
    }
    const exposition = await text(apiUrl());
    const series = httpSeries(parseExposition(exposition));
    // No client input in a label: 2 listeners × 8 method values, and a route pattern or `other` per answer.
    for (const token of tokens) expect(exposition).not.toContain(token);
    const allowed = new Set<string>([...HTTP_METHODS, OTHER_LABEL]);
    expect(series.filter((s) => !allowed.has(s.labels.method!))).toEqual([]);
    expect(new Set(series.map((s) => s.labels.method)).size).toBeLessThanOrEqual(allowed.size);
    const statuses = new Set(series.map((s) => s.labels.status));
    expect(series.length - before).toBeLessThanOrEqual(2 * allowed.size * statuses.size);
    expect(series.length - before).toBeLessThan(50);
  });

  withPromtool('the API process: promtool check metrics is clean', async () => {
    expect(checkMetrics(await text(apiUrl()))).toEqual({ status: 0, output: '' });
  });

  withPromtool('the worker process: promtool check metrics is clean', async () => {
    expect(checkMetrics(await text(workerUrl))).toEqual({ status: 0, output: '' });
  });

  it.each([
    ['API', () => stack.internalUrl],
    ['worker', () => workerUrl],
  ])('the %s process: one prefix per owner, snake_case label names', async (_name, url) => {
    const samples = await scrape(url());
    expect(samples.length).toBeGreaterThan(0);
    const names = new Set(samples.map((s) => s.name));
    expect([...names].filter((n) => !OWN_PREFIXES.some((p) => n.startsWith(p)))).toEqual([]);
    const labels = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    expect([...labels].filter((l) => !LABEL_NAME.test(l))).toEqual([]);
  });

  it("exports the workflows' series with the SDK's labels in snake_case", async () => {
    const finished = (await scrape(workerUrl)).filter(
      (s) => s.name === 'paylater_finance_applications_finished_total' && s.labels.task_queue === stack.t.taskQueue,
    );
    expect(finished.length).toBeGreaterThan(0);
    expect(finished[0]!.labels).toMatchObject({
      namespace: 'default',
      task_queue: stack.t.taskQueue,
      workflow_type: 'financeApplicationWorkflow',
    });
  });
});

describe('snakeCaseLabelNames', () => {
  it('renames label names and leaves names, comments and values as they are', () => {
    const input = [
      '# HELP x_total taskQueue="a" stays',
      '# TYPE x_total counter',
      'x_total{namespace="default",taskQueue="q",workflowType="wf"} 1',
      'x_total{le="0.5",taskQueue="a,fooBar=\\"b\\" \\\\"} 2 1700000000',
      'y 3',
      'broken{taskQueue="unterminated 4',
    ].join('\n');
    expect(snakeCaseLabelNames(input).split('\n')).toEqual([
      '# HELP x_total taskQueue="a" stays',
      '# TYPE x_total counter',
      'x_total{namespace="default",task_queue="q",workflow_type="wf"} 1',
      'x_total{le="0.5",task_queue="a,fooBar=\\"b\\" \\\\"} 2 1700000000',
      'y 3',
      'broken{taskQueue="unterminated 4',
    ]);
  });
});

describe('bounded label values', () => {
  it('a method outside the fixed set, or none, is `other`', () => {
    expect(HTTP_METHODS.map(methodLabel)).toEqual([...HTTP_METHODS]);
    expect(['PROPFIND', 'get', 'CONNECT', '', undefined].map(methodLabel)).toEqual(Array(5).fill(OTHER_LABEL));
  });

  it('a callback event outside our event types is `other`', () => {
    expect(callbackEventLabel('finance-application.status-changed')).toBe('finance-application.status-changed');
    expect(callbackEventLabel('transactionsChanged')).toBe('transactionsChanged');
    expect(['finance-application.anything', 'x'.repeat(10), 42, undefined].map(callbackEventLabel)).toEqual(
      Array(4).fill(OTHER_LABEL),
    );
  });
});
