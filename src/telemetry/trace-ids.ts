import { trace } from '@opentelemetry/api';

/**
 * Trace and span ids of the active span, for a log line written inside one (pino's mixin), named as the Temporal
 * interceptors name them on workflow and activity lines. Without a registered provider no span is ever active.
 */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const context = trace.getActiveSpan()?.spanContext();
  if (!context || !trace.isSpanContextValid(context)) return undefined;
  return { trace_id: context.traceId, span_id: context.spanId };
}
