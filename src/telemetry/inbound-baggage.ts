import {
  propagation,
  type Context,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
} from '@opentelemetry/api';

/**
 * The global propagator, which takes no baggage from what it extracts: a caller's `baggage` header (a merchant's
 * request, a webhook) or a Temporal header. Extracted baggage would ride the trace context into every workflow and
 * activity header (kept unencrypted in the histories: codecs never see headers) and on to the bank's HTTP calls.
 * Trace context (`traceparent`, `tracestate`) is still extracted, and baggage set inside the process still goes out
 * (inject is unchanged); merchants get neither (./third-party-calls.ts).
 */
export class NoInboundBaggage implements TextMapPropagator {
  constructor(private readonly inner: TextMapPropagator) {}

  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    this.inner.inject(ctx, carrier, setter);
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    const own = propagation.getBaggage(ctx);
    const extracted = this.inner.extract(ctx, carrier, getter);
    return own ? propagation.setBaggage(extracted, own) : propagation.deleteBaggage(extracted);
  }

  fields(): string[] {
    return this.inner.fields();
  }
}
