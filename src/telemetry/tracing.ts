import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing, TracingConfig } from './tracing-sdk';

/**
 * Tracing's entry points for the rest of the code (OpenTelemetry; see ./tracing-sdk.ts and docs/operations.md,
 * "Tracing"). The OpenTelemetry SDK and the Temporal interceptors are loaded from ./tracing-sdk.ts only when tracing is
 * on: with tracing off (the default) a process never loads them, which keeps `npm start` quick
 * (docs/decisions/0033-npm-start-loads-while-temporal-boots.md).
 */

/**
 * Where the workflow interceptors live, bundled into the workflow code (prebuilt bundle, tests, replay): the SDK's
 * OpenTelemetry interceptors and the one that carries a webhook's trace to the read it causes (src/workflows).
 */
export const WORKFLOW_TRACING_INTERCEPTOR_MODULE = require.resolve('../workflows/interceptors');

export type { Tracing, TracingConfig } from './tracing-sdk';

type TracingSdk = typeof import('./tracing-sdk');

/** The SDK side, loaded at the first use (only when tracing is on). */
function sdk(): TracingSdk {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- on demand: see the comment at the top
  return require('./tracing-sdk') as TracingSdk;
}

/**
 * Registers the global tracer provider and the http and undici instrumentations. Call before express and http are
 * loaded (src/entry/tracing-preload.ts). `spanProcessor` replaces the OTLP export (tests: an in-memory exporter).
 */
export function startTracing(options: {
  config?: TracingConfig;
  serviceName: string;
  spanProcessor?: SpanProcessor;
}): Tracing {
  return sdk().startTracing(options);
}

/** The Temporal client's interceptors: the trace context goes into every start, update and signal's headers. */
export function tracingClientInterceptors(tracing: Tracing | undefined): { workflow: WorkflowClientInterceptor[] } {
  return { workflow: tracing ? sdk().clientInterceptors() : [] };
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
  return sdk().workerOptions(tracing);
}
