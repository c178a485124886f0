import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type NextFunction, type RequestHandler } from 'express';

/**
 * Express spans without @opentelemetry/instrumentation-express (docs/operations.md, "Tracing"). Written while this
 * process was on OpenTelemetry JS 1.x, where no release of it patched Express 5. On 2.x now, instrumentation-express
 * 0.71.x (on instrumentation ^0.223, patches `express >=4.0.0 <6`) fits: replacing this file by it is open.
 * Two things, as that instrumentation does them:
 * - the HTTP server span is named by the matched route (`POST /applications/:ref`) and gets `http.route`: the
 *   route is handed to the http instrumentation through core's RPC metadata, which it reads when the response ends;
 * - each function of a route gets a child span (`request handler - /applications/:ref`, `middleware - jsonParser`)
 *   in which the function runs, so the Temporal client's spans are its children.
 * The route is the registered pattern, never the raw path: a finance webhook's hash stays out of span names. Outside
 * a recording span (tracing off, probes left untraced) a handler runs unwrapped in all but one check.
 */

const TRACER_NAME = 'paylater-express';

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'all'] as const;

type ExpressSpanType = 'middleware' | 'request_handler';

/** A request as a route sees it (Express's): the matched `route` and the mount path `baseUrl`. */
export type RoutedRequest = IncomingMessage & { route?: unknown; baseUrl?: string };

/** The matched route's pattern with its mount path (`/applications/:ref`); undefined before a route matched. */
export function routeOf(req: RoutedRequest): string | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? `${req.baseUrl ?? ''}${path}` : undefined;
}

/** The span name of one function of a route, as instrumentation-express names it. */
function expressSpanName(type: ExpressSpanType, route: string, name?: string): string {
  return type === 'request_handler' ? `request handler - ${route}` : `middleware - ${name || route}`;
}

/** One function of a route, run inside a span of its own (a child of the request's span). */
export function tracedHandler<Req extends RoutedRequest, Res extends ServerResponse>(
  handler: (req: Req, res: Res, next: NextFunction) => unknown,
  type: ExpressSpanType,
): (req: Req, res: Res, next: NextFunction) => unknown {
  return function traced(req: Req, res: Res, next: NextFunction) {
    const route = routeOf(req);
    const parent = trace.getSpan(context.active());
    if (route === undefined || !parent?.isRecording()) return handler(req, res, next);
    const request = context.active();
    const metadata = getRPCMetadata(request);
    if (metadata?.type === RPCType.HTTP) metadata.route = route;

    const span = trace.getTracer(TRACER_NAME).startSpan(expressSpanName(type, route, handler.name), {
      attributes: { 'http.route': route, 'express.type': type, 'express.name': handler.name || route },
    });
    let ended = false;
    const end = (err?: unknown): void => {
      if (ended) return;
      ended = true;
      if (err !== undefined) failed(span, err);
      span.end();
    };
    // A handler that answers without returning a promise (or whose caller went away) ends with the response.
    res.once('close', () => end());
    // 'route' and 'router' are Express's own signals (skip to the next route or router), not errors. What comes
    // next runs in the request's context, not in this ended span's (a body parser calls next from its stream).
    const onNext: NextFunction = (err?: unknown) => {
      end(err === undefined || err === 'route' || err === 'router' ? undefined : err);
      context.with(request, () => next(err));
    };
    try {
      const result: unknown = context.with(trace.setSpan(request, span), () => handler(req, res, onNext));
      if (result instanceof Promise) {
        return result.then(
          () => end(),
          (err: unknown) => {
            end(err);
            throw err;
          },
        );
      }
      return result;
    } catch (err) {
      end(err);
      throw err;
    }
  };
}

function failed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * An Express Router whose routes (`get`, `post`, … `all`) are traced: the last function of a route is its request
 * handler, the ones before it middleware (a body parser). Error handlers (four parameters) are left as they are.
 * `use` is not traced: middleware mounted for every path (authentication) belongs to no route.
 */
export function tracedRouter(): Router {
  const router = Router();
  for (const method of METHODS) {
    const register = (router[method] as (...args: unknown[]) => Router).bind(router);
    Object.defineProperty(router, method, {
      configurable: true,
      writable: true,
      value: (path: unknown, ...handlers: unknown[]): Router => {
        const fns = handlers.flat(Infinity);
        return register(
          path,
          ...fns.map((fn, i) =>
            typeof fn === 'function' && fn.length < 4
              ? tracedHandler(fn as RequestHandler, i === fns.length - 1 ? 'request_handler' : 'middleware')
              : fn,
          ),
        );
      },
    });
  }
  return router;
}
