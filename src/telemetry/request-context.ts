import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request id of the HTTP request being handled, for every log line written while handling it (pino's mixin,
 * src/telemetry/logging.ts): the route's lines, the receiver pipeline's, the error middleware's, whatever logger they were
 * given. Set by the request log (src/api/request-log.ts) around the rest of the request's middleware.
 */
const requests = new AsyncLocalStorage<{ reqId: string }>();

/** Runs `fn` (the request's remaining middleware) with `reqId` on every log line it writes. */
export function withRequestId<T>(reqId: string, fn: () => T): T {
  return requests.run({ reqId }, fn);
}

/** `{ reqId }` inside a request, `{}` elsewhere (named as pino-http names it on its child logger). */
export function requestLogIds(): { reqId?: string } {
  const store = requests.getStore();
  return store ? { reqId: store.reqId } : {};
}
