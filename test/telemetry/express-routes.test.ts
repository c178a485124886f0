/**
 * Express route spans (src/telemetry/express-routes.ts) on a real Express 5 app over real HTTP, with the http
 * instrumentation and an in-memory exporter: the server span is named by the route, each function of the route
 * has a span of its own, errors mark the handler's span, and nothing else changes.
 */
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import express, { type ErrorRequestHandler, type Request } from 'express';
import { routeOf, tracedHandler, tracedRouter } from '../../src/telemetry/express-routes';
import { startTracing, type Tracing } from '../../src/telemetry/tracing';
import { eventually } from '../helpers/temporal';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
type Definition = { name: string; patch?: (m: unknown) => unknown; unpatch?: (m: unknown) => void };
let httpPatches: Definition[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'express-routes-test', spanProcessor: new SimpleSpanProcessor(exporter) });
  // As in tracing.test.ts: jest's loader bypasses the require hook, so http is patched by hand.
  httpPatches = tracing.instrumentations
    .flatMap((i) => [(i as unknown as { init(): Definition | Definition[] | undefined }).init() ?? []].flat())
    .filter((d) => d.name === 'http');
  for (const d of httpPatches) d.patch?.(http);

  const things = tracedRouter();
  things.get('/things/:id', (req, res) => {
    res.json({ id: req.params.id, route: routeOf(req) });
  });
  things.post('/things/:id', express.json(), async (req, res) => {
    await new Promise((r) => setTimeout(r, 5));
    // A span opened by the handler's own work is a child of the handler's span.
    trace.getTracer('test').startActiveSpan('work', (span) => span.end());
    res.status(201).json({ id: req.params.id, body: req.body as unknown });
  });
  things.get('/fails/:id', async () => {
    await Promise.resolve();
    throw new Error('handler failed');
  });
  things.get('/skip/:id', (_req, _res, next) => next('route'));
  things.get('/skip/:id', (_req, res) => {
    res.json({ skipped: true });
  });
  const app = express();
  app.use('/api', things);
  const onError: ErrorRequestHandler = (err: Error, _req, res, _next) => {
    res.status(500).json({ message: err.message });
  };
  app.use(onError);
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  for (const d of httpPatches) d.unpatch?.(http);
  await tracing?.shutdown();
});

/** The spans of the request whose server span has this target, once the server span is finished. */
async function requestSpans(target: string): Promise<{ server: ReadableSpan; spans: ReadableSpan[] }> {
  const server = await eventually(() =>
    exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && s.attributes['http.target'] === target),
  );
  const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === server.spanContext().traceId);
  return { server, spans };
}
const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) =>
  spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId).map((s) => s.name);

describe('Express route spans', () => {
  it('names the server span by the route with its mount path, never by the raw path', async () => {
    const res = await fetch(`${url}/api/things/secret-123`);
    expect(await res.json()).toEqual({ id: 'secret-123', route: '/api/things/:id' });
    const { server, spans } = await requestSpans('/api/things/secret-123');
    expect(server.name).toBe('GET /api/things/:id');
    expect(server.attributes['http.route']).toBe('/api/things/:id');
    const handler = spans.find((s) => s.name === 'request handler - /api/things/:id')!;
    expect(handler.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(handler.attributes).toMatchObject({ 'http.route': '/api/things/:id', 'express.type': 'request_handler' });
    expect(spans.map((s) => s.name).join(' ')).not.toContain('secret-123');
  });

  it("gives a route's middleware and handler a span each, and the handler's own work is its child", async () => {
    const res = await fetch(`${url}/api/things/t1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: 't1', body: { a: 1 } });
    const { server, spans } = await requestSpans('/api/things/t1');
    expect(server.name).toBe('POST /api/things/:id');
    expect(childrenOf(spans, server).sort()).toEqual(['middleware - jsonParser', 'request handler - /api/things/:id']);
    const handler = spans.find((s) => s.name === 'request handler - /api/things/:id')!;
    expect(childrenOf(spans, handler)).toEqual(['work']);
  });

  it("marks the handler's span with the error it threw; the error middleware still answers", async () => {
    const res = await fetch(`${url}/api/fails/x`);
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ message: 'handler failed' });
    const { spans } = await requestSpans('/api/fails/x');
    const handler = spans.find((s) => s.name === 'request handler - /api/fails/:id')!;
    expect(handler.status).toEqual({ code: SpanStatusCode.ERROR, message: 'handler failed' });
    expect(handler.events.map((e) => e.name)).toEqual(['exception']);
  });

  it("treats next('route') as no error, and an unmatched path keeps the method-only name", async () => {
    expect(await (await fetch(`${url}/api/skip/1`)).json()).toEqual({ skipped: true });
    const { spans } = await requestSpans('/api/skip/1');
    const handlers = spans.filter((s) => s.name === 'request handler - /api/skip/:id');
    expect(handlers).toHaveLength(2);
    expect(handlers.every((s) => s.status.code !== SpanStatusCode.ERROR)).toBe(true);

    expect((await fetch(`${url}/nowhere/abc`)).status).toBe(404);
    const { server } = await requestSpans('/nowhere/abc');
    expect(server.name).toBe('GET');
    expect(server.attributes['http.route']).toBeUndefined();
  });

  it('runs a handler as it is outside a recording span (tracing off, untraced probes)', () => {
    const calls: unknown[] = [];
    const next = () => undefined;
    const handler = tracedHandler((_req, _res, n) => calls.push(n), 'request_handler');
    const req = { route: { path: '/x' }, baseUrl: '' } as unknown as Request;
    context.with(context.active(), () => handler(req, {} as never, next));
    expect(calls).toEqual([next]);
  });
});
