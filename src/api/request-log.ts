import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Level } from 'pino';
import type { Logger } from '../telemetry/logging';
import { loggableTarget } from '../security/redaction';
import { withRequestId } from '../telemetry/request-context';
import type { NextFunction } from 'express';

/** A function every request of a listener goes through before its route (src/api/app.ts). */
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: NextFunction) => void;

/** A caller's X-Request-Id is kept when it is short and plain; anything else is replaced by a generated one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const WEBHOOK = /^\/+webhooks\//i;
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}

/** The path without the query (`?hash=` is a credential), and with a finance webhook's hash replaced. */
export const pathOf = (url: string | undefined): string => loggableTarget(url ?? '/');

/**
 * The request line's level: error answers at info (the error middleware logs each cause once: an expected 503 as
 * one warn line, a 500 with its stack, a 4xx at info), successful webhooks and probes (the hot path) at debug,
 * other successes at info; error when the response itself failed (a socket error: nothing else logged it).
 */
export function requestLineLevel(url: string | undefined, statusCode: number, failed: boolean): Level {
  if (failed) return 'error';
  if (statusCode >= 400) return 'info';
  const path = (url ?? '/').split('?')[0] ?? '/';
  return WEBHOOK.test(path) || PROBES.has(path) ? 'debug' : 'info';
}

/**
 * One line per request with its request id, taken from X-Request-Id when valid (else a UUID) and echoed in the
 * response: `reqId`, `req: { id, method, path }`, `res: { statusCode }`, `responseTime` (ms), the fields and message
 * pino-http writes. The request is logged as method and loggable path only (never the query, a webhook's hash or the
 * headers). The rest of the request runs with its id on every log line (`reqId`, src/telemetry/request-context.ts),
 * whichever logger writes it: the routes' `deps.logger`, the receiver pipeline, the error middleware.
 *
 * Written here rather than with pino-http, on purpose: pino-http makes two child loggers per request (one bound to
 * the request, serialized and redacted at creation), whether or not the line is written at its level. On the
 * bank's webhook path that cost CPU for a debug line production does not write (figures: docs/benchmarks.md). Here a request costs an id, a header, one listener and a level check; the line is
 * built only when its level is on.
 */
export function requestLog(logger: Logger, listener: 'public' | 'internal'): Middleware {
  const log = logger.child({ listener });
  return (req, res, next) => {
    const id = requestIdFrom(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', id);
    // Routing rewrites req.url inside mounted routers: the line names the path as it arrived.
    const { method, url } = req;
    const started = Date.now();
    const done = (err?: Error): void => {
      res.off('finish', done);
      res.off('close', done);
      res.off('error', done);
      const level = requestLineLevel(url, res.statusCode, err !== undefined);
      if (!log.isLevelEnabled(level)) return;
      writeLine(log, level, { id, method, url, res, started, err });
    };
    res.on('finish', done);
    res.on('close', done);
    res.on('error', done);
    withRequestId(id, next);
  };
}

function writeLine(
  log: Logger,
  level: Level,
  line: { id: string; method?: string; url?: string; res: ServerResponse; started: number; err?: Error },
): void {
  const path = pathOf(line.url);
  const { statusCode } = line.res;
  // A response closed before it finished: the client went away (or the socket failed) while it was being answered.
  const aborted = !line.res.writableFinished;
  log[level](
    {
      reqId: line.id,
      req: { id: line.id, method: line.method, path },
      res: { statusCode },
      responseTime: Date.now() - line.started,
      ...(aborted ? { aborted } : {}),
      ...(line.err ? { err: line.err } : {}),
    },
    `${line.method} ${path} ${statusCode}${aborted ? ' (aborted)' : ''}`,
  );
}
