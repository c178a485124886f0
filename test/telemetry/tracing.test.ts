/**
 * One trace from a merchant's POST /applications (and one from the bank's webhook) across the whole test stack:
 * the HTTP server span named by its route, the route's handler span, the Temporal client call, the workflow and
 * activity spans (for a webhook: the status read it causes), and the bank's HTTP call (the
 * sandbox runs in-process over real HTTP). The global tracer provider is registered in this file only (jest runs
 * each file in a worker of its own) and shut down after it.
 */
import { randomUUID } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
// The module object itself (a namespace import's copy cannot be patched).
import http from 'node:http';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { request } from 'undici';
import { createCallbackDispatcher, postMerchantCallback } from '../../src/activities/merchant-callback';
import { CallbackSigner } from '../../src/security/callback-signature';
import { loggableCallbackUrl, loggableUrl } from '../../src/security/redaction';
import { startTracing, type Tracing } from '../../src/telemetry/tracing';
import { startMerchant } from '../activities/helpers/merchant-server';
import { financeApplicationWebhookUrl, tenantWebhookHash } from '../../src/security/webhook-hash';
import { webhookKey } from '../../src/shared/ids';
import { recordFinanceHistory } from '../helpers/histories';
import {
  financeApplicationStateQuery,
  financeApplicationStatusChangedSignal,
} from '../../src/shared/finance-application';
import { STATUS_SIGNAL_SPANS_PER_TASK } from '../../src/workflows/interceptors';
import { startTestStack, TEST_CALLBACK_SIGNING_SECRET, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let stack: TestStack;

/**
 * jest's module loader bypasses the `require` hook through which the http instrumentation patches node's http in a
 * real process (src/entry/tracing-preload.ts): patched here by hand, and unpatched after, as the worker process is reused.
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

/** The text of every byte array in a history (headers' payloads are not encrypted; the rest is ciphertext). */
function bytesIn(value: unknown, found: string[] = []): string[] {
  if (value instanceof Uint8Array) found.push(Buffer.from(value).toString('utf8'));
  else if (Array.isArray(value)) for (const v of value) bytesIn(v, found);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) bytesIn(v, found);
  return found;
}

const spansOf = (traceId: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const attr = (span: ReadableSpan, ...keys: string[]): unknown => keys.map((k) => span.attributes[k]).find(Boolean);
/** A server span's Host (stable semantic conventions, the http instrumentation's default since OpenTelemetry JS 2). */
const hostOf = (span: ReadableSpan): string =>
  `${String(attr(span, 'server.address'))}:${String(attr(span, 'server.port'))}`;

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
        hosts.includes(hostOf(s)) &&
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
    const parentOf = (span: ReadableSpan) =>
      spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);

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
    expect(byName('HandleUpdate:').parentSpanContext?.spanId).toBe(uws.spanContext().spanId);
    const run = byName('RunActivity:createApplication');
    expect(parentOf(run)?.name).toBe('StartActivity:createApplication');
    const bank = spans.find(
      (s) =>
        s.kind === SpanKind.CLIENT &&
        s.parentSpanContext?.spanId !== undefined &&
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
    const parentOf = (span: ReadableSpan) =>
      spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);

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

  it('a burst of status webhooks in one workflow task: the first STATUS_SIGNAL_SPANS_PER_TASK traced, every one counted', async () => {
    const ref = `trace-burst-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    expect(res.status).toBe(201);
    const { financeApplicationId, workflowId } = (await res.json()) as {
      financeApplicationId: string;
      workflowId: string;
    };
    const handle = stack.t.client.workflow.getHandle(workflowId);
    // With no worker, every webhook's signal waits in the history: the next worker gets them in one workflow task.
    await stack.stopWorker();
    const since = exporter.getFinishedSpans().length;
    const burst = STATUS_SIGNAL_SPANS_PER_TASK * 3;
    const url = financeApplicationWebhookUrl(stack.publicUrl, stack.webhooks.hashSecret, ref, TEST_MERCHANT);
    for (let i = 0; i < burst; i++) {
      const hook = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ financeApplicationId }),
      });
      expect(hook.status).toBe(202);
    }
    await stack.startWorker();
    const state = await eventually(async () => {
      const s = await stack.t.client.workflow.getHandle(workflowId).query(financeApplicationStateQuery);
      return s.webhooksReceived >= burst ? s : undefined;
    }, 60_000);
    expect(state.webhooksReceived).toBe(burst);
    // This workflow's spans only (another test's late webhook may still be finishing its spans).
    const signalled = exporter
      .getFinishedSpans()
      .slice(since)
      .filter((s) => s.name.startsWith('SignalWorkflow:') && s.attributes.temporalWorkflowId === workflowId);
    expect(signalled).toHaveLength(burst);
    const signalSpanIds = new Set(signalled.map((s) => s.spanContext().spanId));
    // The traced ones, each a child of its webhook's SignalWorkflow span; the rest were handled without a span.
    const exported = () =>
      exporter
        .getFinishedSpans()
        .slice(since)
        .filter(
          (s) =>
            s.name === `HandleSignal:${financeApplicationStatusChangedSignal.name}` &&
            signalSpanIds.has(s.parentSpanContext?.spanId ?? ''),
        );
    await eventually(() => (exported().length >= STATUS_SIGNAL_SPANS_PER_TASK ? true : undefined));
    expect(exported()).toHaveLength(STATUS_SIGNAL_SPANS_PER_TASK);

    // The run goes on: a terminal change ends it; its history (60 signals in one task) replays under the interceptors.
    stack.sandbox.control.setApplicationStatus(financeApplicationId, 'COMPLETED');
    expect((await handle.result()) as { status: string }).toMatchObject({ status: 'COMPLETED' });
    recordFinanceHistory(await handle.fetchHistory(), 'traced-webhook-burst');
  });

  describe('what leaves the process', () => {
    const PATH_SECRET = 'merchant-path-secret-6f1c2b';
    const QUERY_SECRET = 'merchant-query-secret-93ad07';
    const BANK_QUERY_SECRET = 'bank-query-secret-5e28aa';
    /** Header names any configured propagator writes (W3C trace context and baggage here). */
    const PROPAGATION_HEADERS = ['traceparent', 'tracestate', 'baggage'];
    let merchant: Awaited<ReturnType<typeof startMerchant>>;
    let origin: string;
    beforeAll(async () => {
      merchant = await startMerchant();
      origin = new URL(merchant.url).origin;
      expect(propagation.fields()).toEqual(expect.arrayContaining(PROPAGATION_HEADERS));
    });
    afterAll(() => merchant?.close());

    /** A call made inside a span of ours, with baggage, as a merchant's request would bring them in. */
    const inTracedContext = <T>(fn: () => Promise<T>): Promise<T> =>
      trace.getTracer('test').startActiveSpan('test parent', (span) => {
        const bag = propagation.createBaggage({ tenant: { value: 'shop-a' } });
        return context.with(propagation.setBaggage(context.active(), bag), fn).finally(() => span.end());
      });
    const propagated = (headers: Record<string, unknown>) =>
      [...PROPAGATION_HEADERS, ...propagation.fields()].filter((h) => headers[h] !== undefined);
    const exportedText = (spans: ReadableSpan[]) =>
      JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));

    it('merchant callbacks carry no trace context even when the pool queues them; other calls do (control)', async () => {
      const dispatcher = createCallbackDispatcher({ connections: 1, allowList: { origins: [], loopback: true } });
      const signer = new CallbackSigner([TEST_CALLBACK_SIGNING_SECRET]);
      const before = merchant.received.length;
      try {
        await inTracedContext(async () => {
          // One connection, six callbacks: five wait in the pool and are sent later, from another callback's socket.
          const sent = Array.from({ length: 6 }, (_, i) =>
            postMerchantCallback(
              { url: `${origin}/hooks/${PATH_SECRET}?token=${QUERY_SECRET}`, idempotencyKey: `k-${i}`, event: { i } },
              { allowList: { origins: [], loopback: true }, signer, dispatcher },
            ),
          );
          expect(await Promise.all(sent)).toEqual(Array(6).fill({ delivered: true, status: 200 }));
          // The same receiver, called as the bank is called: the trace context and the baggage are there.
          const control = await request(`${origin}/control`, { method: 'POST', body: '{}' });
          await control.body.dump();
        });
      } finally {
        await dispatcher.close();
      }
      const received = merchant.received.slice(before);
      expect(received).toHaveLength(7);
      const control = received.pop()!;
      expect(propagated(control.headers)).toEqual(expect.arrayContaining(['traceparent', 'baggage']));
      expect(received.map((r) => propagated(r.headers))).toEqual(Array(6).fill([]));
      expect(received.every((r) => r.headers['webhook-signature'] !== undefined)).toBe(true);
    });

    it('on the whole stack: a callback to a URL with a secret path and query, webhooks with the hash in the path and in the query, a bank call with a query: no secret in any exported span, no trace context to the merchant', async () => {
      // Short: a webhook path's hash-long token (43 characters or more) is redacted wherever it stands.
      const ref = `ts-${randomUUID().slice(0, 8)}`;
      stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
      const callbackUrl = `${origin}/hooks/${PATH_SECRET}?token=${QUERY_SECRET}`;
      const since = exporter.getFinishedSpans().length;
      // What the bank receives: every request to the sandbox (in this process), with its headers.
      const sandboxPort = new URL(stack.sandbox.url).port;
      const atTheBank: { path: string; headers: Record<string, unknown> }[] = [];
      const onRequest = (message: unknown) => {
        const { request: req, socket } = message as { request: http.IncomingMessage; socket: { localPort?: number } };
        if (String(socket.localPort) === sandboxPort) atTheBank.push({ path: req.url ?? '', headers: req.headers });
      };
      diagnostics.subscribe('http.server.request.start', onRequest);
      // A caller's baggage stays at the edge: not in Temporal, not to the bank (the trace context goes on).
      const BAGGAGE = `customer=bag-${randomUUID()}`;
      const res = await stack.facade('/applications', {
        method: 'POST',
        headers: { 'content-type': 'application/json', baggage: BAGGAGE },
        body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done', callbackUrl }),
      });
      expect(res.status).toBe(201);
      const { financeApplicationId, workflowId } = (await res.json()) as {
        financeApplicationId: string;
        workflowId: string;
      };
      diagnostics.unsubscribe('http.server.request.start', onRequest);
      const create = atTheBank.find((r) => r.path === '/applications');
      expect(create?.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-/);
      expect(create?.headers.baggage).toBeUndefined();
      expect(atTheBank.filter((r) => r.headers.baggage !== undefined)).toEqual([]);
      // Headers are the only payloads a codec never encrypts: no byte of the history holds the baggage.
      const history = await stack.t.client.workflow.getHandle(workflowId).fetchHistory();
      expect(bytesIn(history).some((text) => text.includes(BAGGAGE.split('=')[1]!))).toBe(false);
      expect(bytesIn(history).some((text) => text.includes('"traceparent":"00-'))).toBe(true);
      const hash = tenantWebhookHash(stack.webhooks.hashSecret, TEST_MERCHANT, ref);
      const key = webhookKey(TEST_MERCHANT, ref);
      for (const path of [`/${key}?hash=${hash}`, `/${key}/${hash}?hash=${hash}&x=${QUERY_SECRET}`]) {
        const hook = await fetch(`${stack.publicUrl}/webhooks/finance-applications${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ financeApplicationId }),
        });
        expect([path, hook.status]).toEqual([path, 202]);
      }
      await inTracedContext(async () => {
        const bank = await request(`${stack.sandbox.url}/_sandbox/api-calls?token=${BANK_QUERY_SECRET}`);
        expect(bank.statusCode).toBe(200);
        await bank.body.dump();
      });

      const [callback] = await eventually(() => {
        const got = merchant.received.filter((r) => r.body.includes(ref));
        return got.length > 0 ? got : undefined;
      });
      expect(callback!.headers['webhook-signature']).toBeDefined();
      expect(propagated(callback!.headers)).toEqual([]);

      // The callback's client span, in the application's trace like every other step: origin and a fixed path.
      const callbackSpan = await eventually(() =>
        exporter
          .getFinishedSpans()
          .slice(since)
          .find((s) => s.kind === SpanKind.CLIENT && String(attr(s, 'url.full')).startsWith(origin)),
      );
      expect(callbackSpan.attributes).toMatchObject({
        'url.full': `${origin}/:callback-path`,
        'url.path': '/:callback-path',
      });
      expect(callbackSpan.attributes['url.query']).toBeUndefined();
      expect(callbackSpan.parentSpanContext?.spanId).toBeDefined();
      // The bank call: its query gone, its trace context sent (the sandbox's server span is its child).
      const bankSpan = await eventually(() =>
        exporter
          .getFinishedSpans()
          .slice(since)
          .find((s) => s.kind === SpanKind.CLIENT && String(attr(s, 'url.full')).endsWith('/_sandbox/api-calls')),
      );
      expect(bankSpan.attributes['url.query']).toBeUndefined();
      const sandboxSpan = await eventually(() =>
        exporter.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === bankSpan.spanContext().spanId),
      );
      expect(sandboxSpan.kind).toBe(SpanKind.SERVER);
      expect(attr(sandboxSpan, 'http.target')).toBe('/_sandbox/api-calls');
      // Both webhooks' server spans, each with the hash replaced or dropped.
      const hooks = await eventually(() => {
        const found = exporter
          .getFinishedSpans()
          .slice(since)
          .filter((s) => s.kind === SpanKind.SERVER && String(attr(s, 'http.target')).includes(ref));
        return found.length === 2 ? found : undefined;
      });
      expect(hooks.map((s) => [attr(s, 'http.target'), attr(s, 'http.url')]).sort()).toEqual([
        [
          `/webhooks/finance-applications/${key}`,
          `${new URL(stack.publicUrl).origin}/webhooks/finance-applications/${key}`,
        ],
        [
          `/webhooks/finance-applications/${key}/:hash`,
          `${new URL(stack.publicUrl).origin}/webhooks/finance-applications/${key}/:hash`,
        ],
      ]);

      // Nothing exported carries a secret or a query; the merchant receiver's own server spans stand for another
      // process's (its path is the merchant's to trace) and are left out.
      const merchantHost = new URL(origin).host;
      const ours = exporter
        .getFinishedSpans()
        .filter((s) => !(s.kind === SpanKind.SERVER && hostOf(s) === merchantHost));
      const text = exportedText(ours);
      for (const secret of [hash, PATH_SECRET, QUERY_SECRET, BANK_QUERY_SECRET, 'token=', 'hash=']) {
        expect([secret, text.includes(secret)]).toEqual([secret, false]);
      }
      expect(ours.filter((s) => s.attributes['url.query'] !== undefined)).toEqual([]);
    });

    it('a finance webhook with its hash in the path and in the query, other paths and URLs', () => {
      expect(loggableUrl('/webhooks/finance-applications/r1/abcdef')).toBe('/webhooks/finance-applications/r1/:hash');
      expect(loggableUrl('//webhooks//finance-applications/r1/abcdef?x=1')).toBe(
        '//webhooks//finance-applications/r1/:hash',
      );
      expect(loggableUrl('http://h:1/webhooks/finance-applications/r1?hash=abc&x=1')).toBe(
        'http://h:1/webhooks/finance-applications/r1',
      );
      expect(loggableUrl('https://user:pw@bank.example/oauth/token?client_secret=s#frag')).toBe(
        'https://bank.example/oauth/token',
      );
      expect(loggableUrl('/applications/r1?pageToken=t')).toBe('/applications/r1');
      expect(loggableUrl('?')).toBe('/');
      expect(loggableCallbackUrl(`https://shop.example:8443/${PATH_SECRET}?token=${QUERY_SECRET}`)).toBe(
        'https://shop.example:8443/:callback-path',
      );
      expect(loggableCallbackUrl('not a url')).toBe(':unparsable-url');
    });
  });
});
