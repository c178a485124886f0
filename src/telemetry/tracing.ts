import { trace, type Attributes } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { TracingConfig } from '../config';
import { loggablePath } from '../security/redaction';

/**
 * OpenTelemetry tracing (issue 11): one trace from a merchant's request or the bank's webhook (the http server
 * span) through the Temporal client call (update-with-start, signal), the workflow and activity spans
 * (@temporalio/interceptors-opentelemetry), to the bank's HTTP call (undici); Express routes name the server span
 * and get a span each (./express-routes.ts). Off unless an OTLP endpoint is
 * configured: otherwise nothing is registered and the Temporal interceptors are left out.
 */

/**
 * Where the workflow interceptors live, bundled into the workflow code (prebuilt bundle, tests, replay): the SDK's
 * OpenTelemetry interceptors and the one that carries a webhook's trace to the read it causes (src/workflows).
 */
export const WORKFLOW_TRACING_INTERCEPTOR_MODULE = require.resolve('../workflows/interceptors');

export interface Tracing {
  /** Processes every span of the process, workflow spans included (through the worker's `exporter` sink). */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** The http and undici instrumentations (a test under jest, whose loader bypasses `require` hooks, patches http by hand). */
  instrumentations: Instrumentation[];
  /** Flushes pending spans and stops the instrumentations. */
  shutdown(): Promise<void>;
}

/** Paths no operator needs a span for: probes and scrapes. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** A URL or path with a finance webhook's hash (path or `?hash=`) replaced: spans are exported outside the process. */
export function traceableUrl(url: string): string {
  const parsed = new URL(url, 'http://placeholder');
  const path = loggablePath(parsed.pathname);
  if (parsed.searchParams.has('hash')) parsed.searchParams.set('hash', ':redacted');
  const query = parsed.search.replace('%3Aredacted', ':redacted');
  return /^https?:\/\//i.test(url) ? `${parsed.origin}${path}${query}` : `${path}${query}`;
}

/**
 * Registers the global tracer provider and the http and undici instrumentations. Call before express and http are
 * loaded (src/telemetry/preload.ts). `spanProcessor` replaces the OTLP export (tests: an in-memory exporter).
 */
export function startTracing(options: {
  config?: TracingConfig;
  serviceName: string;
  spanProcessor?: SpanProcessor;
}): Tracing {
  const resource = new Resource({ 'service.name': options.config?.serviceName ?? options.serviceName });
  const spanProcessor = options.spanProcessor ?? new BatchSpanProcessor(otlpExporter(options.config));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0] ?? ''),
      // The finance webhook's hash is a credential: never in an exported attribute.
      startIncomingSpanHook: (req): Attributes => {
        const target = traceableUrl(req.url ?? '/');
        return { 'http.target': target, 'http.url': target, 'url.path': target.split('?')[0] ?? target };
      },
    }),
    new UndiciInstrumentation({
      startSpanHook: (request): Attributes => {
        const full = traceableUrl(`${request.origin}${request.path}`);
        return { 'url.full': full, 'url.path': new URL(full).pathname };
      },
    }),
  ];
  // No express instrumentation: the one matching this OpenTelemetry line (1.x, the Temporal interceptors') stops at
  // express 4 (express 5 needs the 2.x line). Routes name the server span and get spans of their own through
  // src/telemetry/express-routes.ts instead.
  const unregister = registerInstrumentations({ tracerProvider: provider, instrumentations });
  return {
    spanProcessor,
    resource,
    instrumentations,
    async shutdown() {
      unregister();
      await provider.shutdown();
      trace.disable();
    },
  };
}

function otlpExporter(config: TracingConfig | undefined) {
  if (!config) throw new Error('startTracing: an OTLP configuration or a span processor is required');
  return config.protocol === 'http/json'
    ? new JsonTraceExporter({ url: config.url })
    : new ProtobufTraceExporter({ url: config.url });
}

/** The Temporal client's interceptors: the trace context goes into every start, update and signal's headers. */
export function tracingClientInterceptors(tracing: Tracing | undefined): { workflow: WorkflowClientInterceptor[] } {
  return { workflow: tracing ? [new OpenTelemetryWorkflowClientInterceptor()] : [] };
}

/** The workflow spans' sink of a worker without tracing (and of replay workers): spans are dropped. */
export const NO_TRACING_SINKS: InjectedSinks<{ exporter: { export(spans: unknown[]): void } }> = {
  exporter: { export: { fn: () => undefined, callDuringReplay: false } },
};

/**
 * The worker's part: activity spans (children of the workflow's "StartActivity"), trace ids on activity log lines,
 * and the sink through which the bundled workflow interceptors hand over their spans. The sink is there even with
 * tracing off, as a no-op: the bundle always carries the workflow interceptors (it is built once, before the
 * environment is known), and an unregistered sink would be logged as an error on every workflow task.
 */
export function workerTracingOptions(tracing: Tracing | undefined): {
  activityInterceptors: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<{ exporter: { export(spans: unknown[]): void } }>;
} {
  if (!tracing) return { activityInterceptors: [], sinks: NO_TRACING_SINKS };
  return {
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}
