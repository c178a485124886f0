import type { Attributes, Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CALLBACK_PATH_PLACEHOLDER, loggableCallbackUrl, loggableUrl } from '../security/redaction';
import { isThirdPartyCall } from './third-party-calls';

/** Attributes of the http and undici instrumentations (old and stable semantic conventions) that hold a URL. */
const FULL_URL_KEYS = ['url.full', 'http.url', 'url.original'];
const PATH_KEYS = ['http.target', 'url.path'];
const QUERY_KEYS = ['url.query'];

/**
 * Rewrites a span's URL attributes in place: no query string anywhere, a finance webhook's hash replaced
 * (src/security/redaction.ts); for a call to a third party (a merchant callback), the origin and a fixed path only.
 */
export function redactUrlAttributes(attributes: Attributes, thirdParty: boolean): void {
  for (const key of FULL_URL_KEYS) {
    const value = attributes[key];
    if (typeof value === 'string') attributes[key] = thirdParty ? loggableCallbackUrl(value) : loggableUrl(value);
  }
  for (const key of PATH_KEYS) {
    const value = attributes[key];
    if (typeof value === 'string') attributes[key] = thirdParty ? CALLBACK_PATH_PLACEHOLDER : loggableUrl(value);
  }
  for (const key of QUERY_KEYS) if (key in attributes) delete attributes[key];
}

/**
 * In front of the exporting processor: every span of the process (workflow spans included, through the worker's
 * sink) has its URL attributes redacted before it is exported, whichever instrumentation set them and whatever
 * semantic conventions it followed. A span started inside `asThirdPartyCall` is known by its parent context.
 */
export class RedactingSpanProcessor implements SpanProcessor {
  private readonly thirdParty = new WeakSet<ReadableSpan>();

  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    if (isThirdPartyCall(parentContext)) this.thirdParty.add(span);
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    // The span has ended: its attributes are a plain object no one writes any more, read by the exporter later.
    redactUrlAttributes(span.attributes, this.thirdParty.has(span));
    this.next.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}
