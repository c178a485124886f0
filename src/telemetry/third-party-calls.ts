import {
  context,
  createContextKey,
  type Context,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
} from '@opentelemetry/api';

/**
 * Calls to a third party (a merchant's callback URL): made with `asThirdPartyCall`, they carry none of the service's
 * trace context (no `traceparent`, `tracestate`, `baggage`, nor any header of another configured propagator: the
 * service's trace ids and whatever baggage a caller sent are not the merchant's to see), and their client span shows
 * the URL as origin and a fixed path (src/telemetry/span-redaction.ts). Calls to the bank keep the trace context.
 * With tracing off (no context manager) this is a plain call.
 */
const THIRD_PARTY_CALL = createContextKey('paylater third-party call');

/** Runs `fn` (which starts an HTTP request) as a call to a third party. */
export function asThirdPartyCall<T>(fn: () => T): T {
  return context.with(context.active().setValue(THIRD_PARTY_CALL, true), fn);
}

export function isThirdPartyCall(ctx: Context): boolean {
  return ctx.getValue(THIRD_PARTY_CALL) === true;
}

/**
 * The global propagator, which injects nothing into the carrier of a third-party call. The http and undici
 * instrumentations inject through it after every hook has run, so the context, not the request, says who it is for.
 */
export class NoThirdPartyPropagation implements TextMapPropagator {
  constructor(private readonly inner: TextMapPropagator) {}

  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    if (!isThirdPartyCall(ctx)) this.inner.inject(ctx, carrier, setter);
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    return this.inner.extract(ctx, carrier, getter);
  }

  fields(): string[] {
    return this.inner.fields();
  }
}
