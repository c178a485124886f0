/**
 * One trace from a merchant's POST /applications (and one from the bank's webhook) across the whole test stack:
 * the HTTP server span, the Temporal client call, the workflow and activity spans, and the bank's HTTP call (the
 * sandbox runs in-process over real HTTP). The global tracer provider is registered in this file only (jest runs
 * each file in a worker of its own) and shut down after it.
 */
import { randomUUID } from 'node:crypto';
// The module object itself (a namespace import's copy cannot be patched).
import http from 'node:http';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, traceableUrl, type Tracing } from '../../src/telemetry/tracing';
import { webhookHash } from '../../src/security/webhook-hash';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

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

    // The chain: server span → update-with-start (client) → the workflow's activity → the bank's HTTP call.
    const uws = byName('UpdateWithStartWorkflow:');
    let up: ReadableSpan | undefined = uws;
    while (up && up !== server) up = parentOf(up);
    expect(up).toBe(server);
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
    const hash = webhookHash(stack.webhooks.hashSecret, ref);
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain(hash);
  });

  it("the bank's webhook: one trace from the receiver's HTTP span to the signal and the workflow's handler; the status read it causes runs in the application's trace", async () => {
    const ref = `trace-hook-${randomUUID()}`;
    const since = exporter.getFinishedSpans().length;
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    const { financeApplicationId } = (await res.json()) as { financeApplicationId: string };
    const appTrace = (await eventually(() => serverSpan('/applications', since))).spanContext().traceId;
    const hash = webhookHash(stack.webhooks.hashSecret, ref);
    const hook = await fetch(`${stack.publicUrl}/webhooks/finance-applications/${ref}/${hash}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ financeApplicationId }),
    });
    expect(hook.status).toBe(202);

    const server = await eventually(() => serverSpan(`/webhooks/finance-applications/${ref}/`, since));
    // The hash never leaves the process in a span.
    expect(attr(server, 'http.target')).toBe(`/webhooks/finance-applications/${ref}/:hash`);
    const spans = await eventually(() => {
      const found = spansOf(server.spanContext().traceId);
      return ['SignalWorkflow:', 'HandleSignal:'].every((w) => found.some((s) => s.name.startsWith(w)))
        ? found
        : undefined;
    });
    const signal = spans.find((s) => s.name.startsWith('SignalWorkflow:'))!;
    expect(spans.find((s) => s.spanContext().spanId === signal.parentSpanId)).toBe(server);
    // Handlers record, the workflow body acts (STYLE.md, 4): the read is a child of the body's span, in the
    // application's trace, with the bank's GET under it.
    const read = await eventually(() =>
      spansOf(appTrace).find(
        (s) =>
          s.name === 'RunActivity:getApplicationStatus' &&
          spansOf(appTrace).some((c) => c.kind === SpanKind.CLIENT && c.parentSpanId === s.spanContext().spanId),
      ),
    );
    expect(read).toBeDefined();
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
