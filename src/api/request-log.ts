import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../logging';
import { loggablePath } from '../security/redaction';
import { withRequestId } from '../telemetry/request-context';

/** A caller's X-Request-Id is kept when it is short and plain; anything else is replaced by a generated one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const WEBHOOK = /^\/+webhooks\//i;
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}

/** The path without the query (`?hash=` is a credential), and with a finance webhook's hash replaced. */
const pathOf = (url: string | undefined): string => loggablePath((url ?? '/').split('?')[0] ?? '/');

/**
 * One line per request (pino-http) with its request id, taken from X-Request-Id when valid and echoed in the
 * response. The request is logged as method and loggable path only: pino-http's default would log the URL (a
 * webhook's hash) and the headers. Successful webhooks and probes are the hot path: debug; error answers info.
 * The rest of the request runs with its id on every log line (`reqId`, src/telemetry/request-context.ts), whichever
 * logger writes it: the routes' `deps.logger`, the receiver pipeline, the error middleware.
 */
export function requestLog(logger: Logger, listener: 'public' | 'internal'): RequestHandler {
  const log = requestLine(logger, listener);
  // genReqId below always answers a string.
  return (req, res, next) => log(req, res, () => withRequestId(req.id as string, next));
}

function requestLine(logger: Logger, listener: 'public' | 'internal'): RequestHandler {
  return pinoHttp({
    logger: logger.child({ listener }),
    quietReqLogger: true,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const id = requestIdFrom(req.headers['x-request-id']);
      res.setHeader('X-Request-Id', id);
      return id;
    },
    wrapSerializers: false,
    serializers: {
      req: (req: IncomingMessage & { id?: unknown }) => ({ id: req.id, method: req.method, path: pathOf(req.url) }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (req, res, err) => {
      if (err) return 'error'; // the response itself failed (a socket error): nothing else logged it
      // Error answers are logged once, with their cause, by the error middleware (an expected 503 as one warn line,
      // a 500 with its stack, a 4xx at info): the request line stays at info.
      if (res.statusCode >= 400) return 'info';
      const path = pathOf(req.url);
      return WEBHOOK.test(path) || PROBES.has(path) ? 'debug' : 'info';
    },
    customSuccessMessage: (req, res) => `${req.method} ${pathOf(req.url)} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${pathOf(req.url)} ${res.statusCode}`,
  });
}
