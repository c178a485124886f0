/**
 * One trace from a merchant's POST /applications (and one from the bank's webhook) across the whole test stack:
 * the HTTP server span named by its route, the route's handler span, the Temporal client call, the workflow and
 * activity spans (for a webhook: the status read it causes), and the bank's HTTP call (the
 * sandbox runs in-process over real HTTP). The global tracer provider is registered in this file only (jest runs
 * each file in a worker of its own) and shut down after it.
 */
import { randomUUID } from 'node:crypto';
// The module object itself (a namespace import's copy cannot be patched).
import http from 'node:http';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, traceableUrl, type Tracing } from '../../src/telemetry/tracing';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { webhookKey } from '../../src/shared/ids';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let stack: TestStack;

/**
 * jest's module loader bypasses the `require` hook through which the http instrumentation patches node's http in a
 * real process (src/telemetry/preload.ts): patched here by hand, and unpatched after, as the worker process is reused.
 */
type Definition = { name: string; patch?: (m: unknown) => unknown; unpatch?: (m: unknown) => void };
let httpPatches: Definition[] = [];

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'paylater-test', spanProcessor: new SimpleSpanProcessor(exporter) });
  httpPatches = tracing.instrumentations
    .flatMap((i) => [(i as unknown as { init(): Definition | Definition[] | undefined }).init() ?? []].flat())
    .filter((d) => d.name === 'http');
  for (const d of httpPatches) d.patch?.(http);
  stack = await startTestStack({ tracing });
});
afterAll(async () => {
  await stack?.close();
  for (const d of httpPatches) d.unpatch?.(http);
  await tracing?.shutdown();
});

const spansOf = (traceId: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const attr = (span: ReadableSpan, ...keys: string[]): unknown => keys.map((k) => span.attributes[k]).find(Boolean);

/**
 * The server span of a request to `path` on one of our listeners (the sandbox serves /applications too) finished
 * after the first `since` spans: tests run in order, each looks at its own requests.
 */
function serverSpan(path: string, since: number): ReadableSpan | undefined {
  const hosts = [stack.internalUrl, stack.publicUrl].map((u) => new URL(u).host);
  return exporter
    .getFinishedSpans()
    .slice(since)
    .find(
      (s) =>
        s.kind === SpanKind.SERVER &&
        hosts.includes(String(attr(s, 'http.host'))) &&
        String(attr(s, 'http.target', 'url.path')).startsWith(path),
    );
}

describe('tracing', () => {
  it('POST /applications: one trace from the HTTP request through update-with-start, workflow and activity to the bank', async () => {
    const ref = `trace-${randomUUID()}`;
    const since = exporter.getFinishedSpans().length;
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    expect(res.status).toBe(201);

    const server = await eventually(() => serverSpan('/applications', since));
    const traceId = server.spanContext().traceId;
    // Workflow spans reach the exporter through the worker's sink once their workflow task completes.
    const spans = await eventually(() => {
      const found = spansOf(traceId);
      const wanted = [
        'request handler - /applications',
        'middleware - jsonParser',
        'UpdateWithStartWorkflow:',
        'HandleUpdate:',
        'StartActivity:createApplication',
        'RunActivity:createApplication',
      ];
      const bankCall = found.some(
        (s) => s.kind === SpanKind.CLIENT && String(attr(s, 'url.full')).includes('/applications'),
      );
      return wanted.every((w) => found.some((s) => s.name.startsWith(w))) && bankCall ? found : undefined;
    });
    const byName = (prefix: string) => spans.find((s) => s.name.startsWith(prefix))!;
    const parentOf = (span: ReadableSpan) => spans.find((s) => s.spanContext().spanId === span.parentSpanId);

    // The server span is named by the route; the route's body parser and handler are its children.
    expect(server.name).toBe('POST /applications');
    expect(attr(server, 'http.route')).toBe('/applications');
    const handler = byName('request handler - /applications');
    expect(parentOf(handler)).toBe(server);
    expect(attr(handler, 'http.route')).toBe('/applications');
    expect(parentOf(byName('middleware - jsonParser'))).toBe(server);
    // The chain: server span → route handler → update-with-start (client) → the workflow's activity → the bank.
    const uws = byName('UpdateWithStartWorkflow:');
    expect(parentOf(uws)).toBe(handler);
    // The workflow's own span (RunWorkflow) is exported when the run ends; its update handler and activity are here.
    expect(byName('HandleUpdate:').parentSpanId).toBe(uws.spanContext().spanId);
    const run = byName('RunActivity:createApplication');
    expect(parentOf(run)?.name).toBe('StartActivity:createApplication');
    const bank = spans.find(
      (s) =>
        s.kind === SpanKind.CLIENT &&
        s.parentSpanId !== undefined &&
        String(attr(s, 'url.full')).endsWith('/applications'),
    )!;
    expect(bank).toBeDefined();
    expect(parentOf(bank)).toBe(run);
    // No span anywhere carries a finance webhook's hash (the webhookUrl is in the bank call's body, not its URL).
    const hash = tenantWebhookHash(stack.webhooks.hashSecret, TEST_MERCHANT, ref);
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain(hash);
  });

  it("the bank's webhook: one trace from the receiver's HTTP span and its route through the signal to the status read it causes and the bank's GET", async () => {
    const ref = `trace-hook-${randomUUID()}`;
    // No scripted change: the only webhook of this application is the one sent below (the sandbox sends none).
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const since = exporter.getFinishedSpans().length;
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    const { financeApplicationId, workflowId } = (await res.json()) as {
      financeApplicationId: string;
      workflowId: string;
    };
    const appTrace = (await eventually(() => serverSpan('/applications', since))).spanContext().traceId;
    // The webhookUrl the bank was given: the merchant's key for the reference, and its hash.
    const key = webhookKey(TEST_MERCHANT, ref);
    const hash = tenantWebhookHash(stack.webhooks.hashSecret, TEST_MERCHANT, ref);
    const hook = await fetch(`${stack.publicUrl}/webhooks/finance-applications/${key}/${hash}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ financeApplicationId }),
    });
    expect(hook.status).toBe(202);

    const route = '/webhooks/finance-applications/:ref/:hash';
    const server = await eventually(() => serverSpan(`/webhooks/finance-applications/${key}/`, since));
    // Named by its route, never by its path: the hash never leaves the process in a span.
    expect(server.name).toBe(`POST ${route}`);
    expect(attr(server, 'http.route')).toBe(route);
    expect(attr(server, 'http.target')).toBe(`/webhooks/finance-applications/${key}/:hash`);
    const statusUrl = `/applications/${financeApplicationId}/status`;
    const spans = await eventually(() => {
      const found = spansOf(server.spanContext().traceId);
      const wanted = [
        'SignalWorkflow:',
        'HandleSignal:',
        'StartActivity:getApplicationStatus',
        'RunActivity:getApplicationStatus',
      ];
      const bankRead = found.some((s) => s.kind === SpanKind.CLIENT && String(attr(s, 'url.full')).endsWith(statusUrl));
      return wanted.every((w) => found.some((s) => s.name.startsWith(w))) && bankRead ? found : undefined;
    });
    const byName = (prefix: string) => spans.find((s) => s.name.startsWith(prefix))!;
    const parentOf = (span: ReadableSpan) => spans.find((s) => s.spanContext().spanId === span.parentSpanId);

    // server span → the route's handler → SignalWorkflow → HandleSignal (the handler records the webhook) …
    const handler = byName(`request handler - ${route}`);
    expect(parentOf(handler)).toBe(server);
    const signal = byName('SignalWorkflow:');
    expect(parentOf(signal)).toBe(handler);
    expect(parentOf(byName('HandleSignal:'))).toBe(signal);
    // … and the read the workflow body schedules for it (WebhookReadTraceInterceptor), then the bank's GET.
    const start = byName('StartActivity:getApplicationStatus');
    expect(parentOf(start)).toBe(signal);
    const run = byName('RunActivity:getApplicationStatus');
    expect(parentOf(run)).toBe(start);
    const get = spans.find((s) => s.kind === SpanKind.CLIENT && String(attr(s, 'url.full')).endsWith(statusUrl))!;
    expect(parentOf(get)).toBe(run);
    // The read is no longer in the application's trace (its polls are, as activities of another type).
    expect(spansOf(appTrace).filter((s) => s.name.includes('getApplicationStatus'))).toEqual([]);

    // A terminal change (its webhook traced the same way) ends the run; its history, whose signals carry trace
    // headers, is the replay test's proof that the interceptor leaves the commands alone (RECORD_HISTORIES=1).
    stack.sandbox.control.setApplicationStatus(financeApplicationId, 'COMPLETED');
    const handle = stack.t.client.workflow.getHandle(workflowId);
    await handle.result();
    const history = await handle.fetchHistory();
    const signalled = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signalled.length).toBeGreaterThanOrEqual(2);
    for (const e of signalled) {
      expect(Object.keys(e.workflowExecutionSignaledEventAttributes?.header?.fields ?? {})).toContain('_tracer-data');
    }
    recordFinanceHistory(history, 'traced-webhooks');
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain(hash);
  });

  it('keeps a finance webhook hash out of exported URLs, in the path and in the query', () => {
    expect(traceableUrl('/webhooks/finance-applications/r1/abcdef')).toBe('/webhooks/finance-applications/r1/:hash');
    expect(traceableUrl('http://h:1/webhooks/finance-applications/r1?hash=abc&x=1')).toBe(
      'http://h:1/webhooks/finance-applications/r1?hash=:redacted&x=1',
    );
    expect(traceableUrl('/applications/r1')).toBe('/applications/r1');
  });
});
