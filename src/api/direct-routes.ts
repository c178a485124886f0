import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { NextFunction, Router } from 'express';
import { tracedHandler, tracedRouter } from '../telemetry/express-routes';
import type { WebhookHandler, WebhookRequest } from './webhook-receiver';

/**
 * The bank's webhooks are the public listener's hot path: thousands an hour, each a few hundred bytes. Express's
 * share of one (its app and router objects, a walk over every layer and route with their regular expressions, URL
 * parsing, prototype switches) was measured at about a third of the receiver's own CPU (README "Where the
 * receiver's cost is"). So the public listener routes a webhook itself when its request line is in the form the
 * bank uses, and hands every other request to the Express app, where the same routes are registered too:
 *   - direct: `POST` with the route's path exactly (its literal segments as written, each parameter of unreserved
 *     characters only, so nothing to percent-decode), with or without a query;
 *   - Express: any other spelling Express accepts for the same route (other letter case, a trailing slash,
 *     percent-encoded parameters), and every other path and method, 404s included.
 * Both run the same functions in the same order, so the answer, log line, metrics and spans are the same either
 * way: the request log (request id, the line at its end), the request-duration metric labelled with the route's
 * pattern, the route's span (`request handler - <pattern>`), the receiver, and the one error middleware's answer.
 */

/** A route of the public listener that it may dispatch itself: its Express pattern and its receiver. */
export interface DirectRoute {
  /** Express pattern, `:name` parameters only (`/webhooks/finance-applications/:ref/:hash`). */
  path: string;
  handler: WebhookHandler;
}

/** The functions every request of a listener goes through before its route (src/api/app.ts baseApp). */
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: NextFunction) => void;

/** Characters a path parameter may hold on the direct path: RFC 3986 unreserved, nothing to decode. */
const PARAM = '([A-Za-z0-9._~-]+)';

/** The direct path's pattern of a route: its exact path, parameters of unreserved characters, any query. */
export function directPattern(path: string): { regex: RegExp; names: string[] } {
  const names: string[] = [];
  const source = path
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(segment.slice(1));
      return PARAM;
    })
    .join('/');
  return { regex: new RegExp(`^${source}(?:\\?(.*))?$`), names };
}

/** The routes, as a traced Express router: every spelling of them that the direct path leaves to Express. */
export function directRoutesRouter(routes: readonly DirectRoute[]): Router {
  const router = tracedRouter();
  for (const route of routes) router.post(route.path, route.handler);
  return router;
}

/**
 * The public listener's request listener: `POST` requests in a route's exact form go through `before` (the request
 * log and the metric, as Express would run them), the route's traced receiver and, on an error, `onError` (the error
 * middleware); everything else goes to `app`.
 */
export function directDispatch(options: {
  routes: readonly DirectRoute[];
  /** Everything else: the listener's Express app. */
  app: RequestListener;
  before: readonly Middleware[];
  onError: (err: unknown, req: WebhookRequest, res: ServerResponse) => void;
}): RequestListener {
  const { app, before, onError } = options;
  const routes = options.routes.map((route) => ({
    ...route,
    ...directPattern(route.path),
    traced: tracedHandler<WebhookRequest, ServerResponse>(route.handler, 'request_handler'),
  }));
  return (req, res) => {
    if (req.method === 'POST') {
      const url = req.url ?? '';
      for (const route of routes) {
        const match = route.regex.exec(url);
        if (!match) continue;
        const params: Record<string, string> = {};
        route.names.forEach((name, i) => (params[name] = match[i + 1]!));
        // What Express gives a matched route: its parameters, the parsed query (its default, querystring), the
        // route (its pattern names metrics and spans: routeOf) and the mount path.
        const routed = Object.assign(req, {
          params,
          query: parseQuery(match[route.names.length + 1] ?? ''),
          route: { path: route.path },
          baseUrl: '',
        });
        const fail = (err: unknown) => onError(err, routed, res);
        const run = (i: number): void => {
          if (i < before.length) {
            before[i]!(routed, res, (err?: unknown) => (err ? fail(err) : run(i + 1)));
            return;
          }
          (route.traced(routed, res, fail) as Promise<void>).catch(fail);
        };
        run(0);
        return;
      }
    }
    app(req, res);
  };
}
