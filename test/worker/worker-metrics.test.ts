import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { awaitFinanceApplication, startFinanceApplication } from '../../src/client';
import type { ApplicationScript } from '../../src/sandbox';
import type { FinanceApplicationSettings } from '../../src/shared/finance-application';
import { TEMPORAL_SDK_METRICS, startWorkerMetricsServer, type WorkerMetricsServer } from '../../src/worker/metrics';
import { startTestStack, type TestStack } from '../helpers/stack';
import { installWorkerRuntime } from '../helpers/worker-runtime';
import { eventually } from '../helpers/temporal';
import { parseExposition, sumOf, type Sample } from '../helpers/prometheus';
import { TEST_MERCHANT } from '../helpers/merchants';

/**
 * The worker's listener (WORKER_METRICS_PORT) on the whole stack: the SDK's `temporal_` series through the Runtime's
 * Prometheus exporter, the workflows' and activities' business metrics, and the health routes. A webhook-announced
 * application and a poll-only one (the sandbox drops its webhooks) move different counters.
 */

/** Reads only on webhooks (the poll timers are far away). */
const WEBHOOKS_ONLY: FinanceApplicationSettings = { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 };
/** Polls often and never slows down. */
const FAST_POLL: FinanceApplicationSettings = { fastPollIntervalMs: 200, slowPollIntervalMs: 3_600_000 };
const steps = (afterMs: number) => ['IN_PROGRESS', 'COMPLETED'].map((status) => ({ status, afterMs }));

describe('worker metrics and health (WORKER_METRICS_PORT)', () => {
  let stack: TestStack;
  let server: WorkerMetricsServer;
  let url: string;

  beforeAll(async () => {
    const runtimeMetricsUrl = await installWorkerRuntime();
    stack = await startTestStack();
    server = await startWorkerMetricsServer({
      port: 0,
      host: '127.0.0.1',
      registry: stack.workerMetrics.registry,
      runtimeMetricsUrl,
      logger: pino({ level: 'silent' }),
    });
    server.setWorkers(stack.worker());
    url = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close();
    await stack?.close();
  });

  /** This file's series only (its own task queue): other files' workers share nothing with this Runtime anyway. */
  async function scrape(): Promise<Sample[]> {
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return parseExposition(await res.text()).filter(
      (s) => s.labels.task_queue === undefined || s.labels.task_queue === stack.t.taskQueue,
    );
  }

  async function follow(script: ApplicationScript, settings: FinanceApplicationSettings) {
    const ref = `metrics-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript(script, { merchantReference: ref });
    await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings },
      { taskQueue: stack.t.taskQueue },
    );
    return awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
  }

  const business = (samples: Sample[]) => ({
    started: sumOf(samples, 'paylater_finance_applications_started_total'),
    completed: sumOf(samples, 'paylater_finance_applications_finished_total', {
      outcome: 'terminal',
      status: 'COMPLETED',
    }),
    byWebhook: sumOf(samples, 'paylater_finance_application_status_changes_total', { source: 'webhook' }),
    byPoll: sumOf(samples, 'paylater_finance_application_status_changes_total', { source: 'poll' }),
    byCreate: sumOf(samples, 'paylater_finance_application_status_changes_total', { source: 'create' }),
    unannounced: sumOf(samples, 'paylater_finance_application_unannounced_changes_total'),
    delays: sumOf(samples, 'paylater_finance_application_webhook_delay_seconds_count'),
  });

  it('a webhook-announced application counts webhook changes and their delays, no unannounced change', async () => {
    const before = business(await scrape());
    const final = await follow({ steps: steps(500) }, WEBHOOKS_ONLY);
    expect(final).toMatchObject({ done: true, outcome: 'terminal', status: 'COMPLETED' });
    const webhookChanges = final.history.filter((h) => h.source === 'webhook').length;
    expect(webhookChanges).toBeGreaterThan(0);

    // The SDK's sink delivers workflow metrics after the workflow task completes: wait for the final count.
    const after = await eventually(async () => {
      const now = business(await scrape());
      return now.completed === before.completed + 1 ? now : undefined;
    });
    expect(after.started - before.started).toBe(1);
    expect(after.byWebhook - before.byWebhook).toBe(webhookChanges);
    expect(after.delays - before.delays).toBe(webhookChanges);
    expect(after.byPoll - before.byPoll).toBe(0);
    expect(after.unannounced - before.unannounced).toBe(0);
  });

  it('a poll-only application (webhooks dropped) counts every change as found by polling and unannounced', async () => {
    const before = business(await scrape());
    const final = await follow({ steps: steps(1_000), webhooks: { drop: true } }, FAST_POLL);
    expect(final).toMatchObject({ done: true, outcome: 'terminal', status: 'COMPLETED', webhooksReceived: 0 });
    const pollChanges = final.history.filter((h) => h.source === 'poll').length;
    expect(pollChanges).toBeGreaterThan(0);

    const after = await eventually(async () => {
      const now = business(await scrape());
      return now.completed === before.completed + 1 ? now : undefined;
    });
    expect(after.byPoll - before.byPoll).toBe(pollChanges);
    expect(after.unannounced - before.unannounced).toBe(pollChanges);
    expect(after.byWebhook - before.byWebhook).toBe(0);
    expect(after.delays - before.delays).toBe(0);
    expect(after.byCreate - before.byCreate).toBe(final.history.filter((h) => h.source === 'create').length);
  });

  it('serves the SDK series prefixed temporal_ and the activities metrics on one endpoint', async () => {
    const samples = await scrape();
    const names = new Set(samples.map((s) => s.name.replace(/_(bucket|sum|count)$/, '')));
    // The failure series appear once something failed; every other series the alerts and dashboard use is here.
    for (const name of TEMPORAL_SDK_METRICS.filter((n) => !/fail/.test(n))) expect(names).toContain(name);
    expect(sumOf(samples, 'paylater_bank_token_requests_total', { outcome: 'ok' })).toBeGreaterThan(0);
  });

  it('answers /healthz and /readyz with both Workers, their slots and the last task received', async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 'ready',
      state: 'RUNNING',
      workers: {
        main: {
          taskQueue: stack.t.taskQueue,
          state: 'RUNNING',
          slots: { workflowTasks: { used: expect.any(Number) }, activities: { used: expect.any(Number) } },
          lastTaskReceivedAt: expect.any(String),
        },
        bankReads: { state: 'RUNNING', lastTaskReceivedAt: expect.any(String) },
      },
    });
  });

  it('answers /readyz 503 draining from SIGTERM on (setDraining), the workers still running, /healthz still 200', async () => {
    const draining = await startWorkerMetricsServer({
      port: 0,
      host: '127.0.0.1',
      registry: stack.workerMetrics.registry,
      logger: pino({ level: 'silent' }),
    });
    try {
      draining.setWorkers(stack.worker());
      const base = `http://127.0.0.1:${draining.port}`;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      draining.setDraining();
      const res = await fetch(`${base}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ status: 'draining', state: 'RUNNING', workers: { main: {} } });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await draining.close();
    }
  });

  it('reports not ready once the workers stop', async () => {
    await stack.stopWorker();
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'not_ready', state: 'STOPPED' });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});
