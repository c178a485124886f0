import { diag, propagation, trace, type Attributes, type TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SDKRegistrationConfig,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { loggableTarget } from '../security/redaction';
import { RedactingSpanProcessor } from './span-redaction';
import { NoInboundBaggage } from './inbound-baggage';
import { NoThirdPartyPropagation } from './third-party-calls';

/**
 * The OpenTelemetry SDK's side of ./tracing.ts, loaded only when tracing is on (its modules take about half a second to
 * load). OpenTelemetry tracing (docs/operations.md, "Tracing"): one trace from a merchant's request or the bank's
 * webhook (the http server span) through the Temporal client call (update-with-start, signal), the workflow and
 * activity spans (@temporalio/interceptors-opentelemetry), to the bank's HTTP call (undici); Express routes name the
 * server span and get a span each (./express-routes.ts). Off unless an OTLP endpoint is configured: otherwise nothing
 * is registered and the Temporal interceptors are left out. What leaves the process: URLs without query strings or
 * capability paths (./span-redaction.ts), no caller's baggage (./inbound-baggage.ts), and no trace context on calls to
 * merchants (./third-party-calls.ts).
 */

export interface Tracing {
  /**
   * Processes every span of the process, workflow spans included (through the worker's `exporter` sink): URL
   * attributes redacted, then exported.
   */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** The http and undici instrumentations (a test under jest, whose loader bypasses `require` hooks, patches http by hand). */
  instrumentations: Instrumentation[];
  /** Flushes pending spans and stops the instrumentations. */
  shutdown(): Promise<void>;
}

/** OTLP trace export; undefined when tracing is off. */
export interface TracingConfig {
  /** Where spans are posted (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces). */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_SERVICE_NAME; undefined: the entry point's name. */
  serviceName?: string;
}

/** Paths no operator needs a span for: probes and scrapes. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Registers the global tracer provider and the http and undici instrumentations. Call before express and http are
 * loaded (src/entry/tracing-preload.ts). `spanProcessor` replaces the OTLP export (tests: an in-memory exporter).
 */
export function startTracing(options: {
  config?: TracingConfig;
  serviceName: string;
  spanProcessor?: SpanProcessor;
}): Tracing {
  const resource = resourceFromAttributes({ 'service.name': options.config?.serviceName ?? options.serviceName });
  const spanProcessor = new RedactingSpanProcessor(
    options.spanProcessor ?? new BatchSpanProcessor(otlpExporter(options.config)),
  );
  const provider = new TracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0] ?? ''),
      startIncomingSpanHook: incomingUrlAttributes,
    }),
    new UndiciInstrumentation(),
  ];
  // No express instrumentation yet: routes name the server span and get spans of their own through
  // src/telemetry/express-routes.ts (see there).
  const unregister = registerInstrumentations({ tracerProvider: provider, instrumentations });
  return {
    spanProcessor,
    resource,
    instrumentations,
    async shutdown() {
      unregister();
      await provider.shutdown();
      trace.disable();
      propagation.disable();
    },
  };
}

/**
 * The provider, registering the propagator that `OTEL_PROPAGATORS` names (W3C trace context and baggage by default)
 * wrapped so that no baggage comes in from a caller (./inbound-baggage.ts) and calls to merchants carry none of it.
 */
class TracerProvider extends NodeTracerProvider {
  override register(config: SDKRegistrationConfig = {}): void {
    const propagator = config.propagator === undefined ? propagatorFromEnv() : config.propagator;
    super.register({
      ...config,
      propagator: propagator ? new NoThirdPartyPropagation(new NoInboundBaggage(propagator)) : null,
    });
  }
}

/** The propagators of this SDK line: the 2.x provider no longer reads `OTEL_PROPAGATORS` itself (sdk-node does). */
const PROPAGATORS: Record<string, () => TextMapPropagator> = {
  tracecontext: () => new W3CTraceContextPropagator(),
  baggage: () => new W3CBaggagePropagator(),
};

/**
 * `OTEL_PROPAGATORS` as the 1.x provider read it: a comma-separated list, `tracecontext,baggage` when unset, `none`
 * for no propagation; a name without a propagator here (b3, jaeger: packages not installed) is skipped with a warning.
 */
export function propagatorFromEnv(value = process.env.OTEL_PROPAGATORS): TextMapPropagator | null {
  const names = [
    ...new Set(
      (value?.trim() ? value : 'tracecontext,baggage')
        .split(',')
        .map((name) => name.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  if (names.includes('none')) return null;
  const propagators = names.flatMap((name) => {
    const make = PROPAGATORS[name];
    if (!make) diag.warn(`Propagator "${name}" requested through OTEL_PROPAGATORS is unavailable.`);
    return make ? [make()] : [];
  });
  if (propagators.length === 0) return null;
  return propagators.length === 1 ? propagators[0]! : new CompositePropagator({ propagators });
}

/**
 * A server span's URL from the request line as it arrived: the http instrumentation parses it against the Host
 * header, which reads a path like `//webhooks/finance-applications/…` as a host and its hash as the path. The
 * redacting processor then has a path to redact, never a misread one.
 */
function incomingUrlAttributes(req: IncomingMessage): Attributes {
  const path = loggableTarget(req.url ?? '/');
  const scheme = (req.socket as Partial<TLSSocket>).encrypted ? 'https' : 'http';
  return {
    'http.target': path,
    'url.path': path,
    'http.url': `${scheme}://${req.headers.host ?? 'localhost'}${path}`,
  };
}

function otlpExporter(config: TracingConfig | undefined) {
  if (!config) throw new Error('startTracing: an OTLP configuration or a span processor is required');
  return config.protocol === 'http/json'
    ? new JsonTraceExporter({ url: config.url })
    : new ProtobufTraceExporter({ url: config.url });
}

/** The Temporal client's interceptors: the trace context goes into every start, update and signal's headers. */
export function clientInterceptors(): WorkflowClientInterceptor[] {
  return [new OpenTelemetryWorkflowClientInterceptor()];
}

/**
 * The worker's part with tracing on: activity spans (children of the workflow's "StartActivity"), trace ids on
 * activity log lines, and the sink through which the bundled workflow interceptors hand over their spans.
 */
export function workerOptions(tracing: Tracing): {
  activityInterceptors: ActivityInterceptorsFactory[];
  sinks: InjectedSinks<{ exporter: { export(spans: unknown[]): void } }>;
} {
  return {
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    sinks: {
      exporter: makeWorkflowExporter(workflowSpanProcessor(tracing.spanProcessor), tracing.resource),
    },
  };
}

/** A workflow span as the SDK's interceptors (OpenTelemetry 1.x, in the workflow bundle) hand it over. */
type WorkflowSpan = Omit<ReadableSpan, 'instrumentationScope' | 'parentSpanContext'> & {
  parentSpanId?: string;
  instrumentationLibrary: ReadableSpan['instrumentationScope'];
};

/**
 * @temporalio/interceptors-opentelemetry 1.24 (the latest) records workflow spans with its own OpenTelemetry 1.x
 * (sdk-trace-base ^1.25.1) and hands them to the worker's sink in the 1.x shape: `parentSpanId` and
 * `instrumentationLibrary`, where this process's 2.x processors and OTLP exporters read `parentSpanContext` and
 * `instrumentationScope`. This adapts each span on its way in; the rest of the shape is the same in both lines.
 */
export function workflowSpanProcessor(processor: SpanProcessor): Parameters<typeof makeWorkflowExporter>[0] {
  return {
    onStart: () => undefined,
    onEnd: (span: WorkflowSpan) => processor.onEnd(fromWorkflowSpan(span)),
    forceFlush: () => processor.forceFlush(),
    shutdown: () => processor.shutdown(),
  };
}

function fromWorkflowSpan(span: WorkflowSpan): ReadableSpan {
  const { parentSpanId, instrumentationLibrary, ...rest } = span;
  const context = span.spanContext();
  return {
    ...rest,
    // A method of the original object (the SDK's copy from the workflow isolate): spread does not keep it bound.
    spanContext: () => context,
    instrumentationScope: instrumentationLibrary,
    parentSpanContext: parentSpanId
      ? { traceId: context.traceId, spanId: parentSpanId, traceFlags: context.traceFlags }
      : undefined,
  };
}
