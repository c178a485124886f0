import type { RequestListener } from 'node:http';
import express, { type Express, type RequestHandler } from 'express';
import type { Client } from '@temporalio/client';
import type { WebhookSecrets } from '../config';
import type { Logger } from '../telemetry/logging';
import type { MerchantDirectory } from '../config/merchants';
import { loggablePath } from '../security/redaction';
import type { MerchantApiKey, OperatorApiKey } from '../security/api-keys';
import type { ServiceSettings } from '../shared/application-settings';
import { authenticate } from './authenticate';
import { requestBudget } from './budgets';
import { answerError, errorHandler, HttpError } from './errors';
import { directDispatch, directRoutesRouter, type Middleware } from './direct-routes';
import { requestLog } from './request-log';
import type { Metrics } from './metrics';
import { livenessRoutes, operatorRoutes, receiverReadinessRoutes } from './routes/health';
import type { DrainSignals } from './drain';
import { financeApplicationWebhookRoutes } from './routes/finance-application-webhooks';
import { financeApplicationRoutes } from './routes/finance-applications';
import { accountWebhookRoutes } from './routes/account-webhooks';
import { consentRefreshRoutes } from './routes/consent-refresh';
import { consentRoutes } from './routes/consents';
import { apiDocsRoutes } from './routes/api-docs';
import { openApiJson } from './openapi/document';
import { routeOf } from '../telemetry/express-routes';

export { authenticate, authenticateOperator } from './authenticate';

export interface AppDeps {
  /** Temporal client: every route is one call through it. */
  client: Client;
  taskQueue: string;
  /** The receivers' secrets (WEBHOOK_HASH_SECRET[_PREVIOUS], WEBHOOK_SECURITY_HEADER); read per request. */
  webhooks: WebhookSecrets;
  /** The merchant facade's API keys (MERCHANT_API_KEYS); read per request. */
  merchantApiKeys: readonly MerchantApiKey[];
  /**
   * The merchants as tenants (MERCHANTS_FILE over the globals): each one's callback allow-list, transactionEvents
   * callback, limits, and the owner of the workflows started before tenancy.
   */
  merchants: MerchantDirectory;
  /**
   * The operators' API keys (OPERATOR_API_KEYS), for every operator route (`authenticateOperator`: /codec); read
   * per request. Absent: none, so operator routes answer 401 (403 to a merchant key).
   */
  operatorApiKeys?: readonly OperatorApiKey[];
  /**
   * Settings of the workflows this app starts (the environment's: config.settings); absent: the built-in defaults
   * (DEFAULT_SERVICE_SETTINGS). Merchants override some per request.
   */
  settings?: ServiceSettings;
  logger: Logger;
  /** One registry for both listeners (served by the internal one's /metrics). */
  metrics: Metrics;
  /**
   * How long a merchant's start call (POST /applications, POST /consents/:id/refresh) may wait for the bank's
   * answer through the workflow before it gets a 503 telling it to retry (both are idempotent). Default 30 s.
   */
  startDeadlineMs?: number;
  /** Readiness: resolves when Temporal answers. */
  checkTemporal(): Promise<void>;
  /**
   * The process's shutdown (src/api/drain.ts): /readyz answers 503 while draining, long-polls answer when the
   * listeners close, calls still waiting at the hard bound answer 503. Absent: never draining (tests).
   */
  drain?: DrainSignals;
}

export interface InternalAppOptions {
  /**
   * More routers on the internal listener (the codec endpoint), mounted in order after /healthz, /readyz and
   * /metrics and before the merchant facade. Each brings its own paths and its own authentication: put
   * `authenticateOperator(deps)` (exported here) in front of an operator route, `authenticate(deps)` in front of a
   * merchant's. A function is given the app's deps
   * (keys, metrics, logger, client), for callers that do not build the deps themselves (startListeners).
   */
  extraRouters?: RequestHandler[] | ((deps: AppDeps) => RequestHandler[]);
}

type Listener = 'public' | 'internal';

/** What every request of a listener goes through before its route: the request log (with its id) and the metric. */
function listenerMiddleware(deps: Pick<AppDeps, 'metrics' | 'logger'>, listener: Listener): Middleware[] {
  return [
    requestLog(deps.logger, listener),
    (req, res, next) => {
      const end = deps.metrics.httpRequests.startTimer({ listener, method: req.method });
      res.on('finish', () => {
        // The matched route pattern, never the raw path: references and hashes stay out of metric labels.
        end({ route: routeOf(req) ?? 'unmatched', status: String(res.statusCode) });
      });
      next();
    },
  ];
}

/** What both listeners share, before their routes: Express settings and the listener's middleware. */
function baseApp(middleware: readonly Middleware[]): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  for (const fn of middleware) app.use(fn);
  return app;
}

/** What both listeners share, after their routes: a JSON 404 and the one error middleware. */
function finish(app: Express, deps: Pick<AppDeps, 'logger'>): Express {
  app.use((req, _res, next) => next(new HttpError(404, `No route for ${req.method} ${loggablePath(req.path)}`)));
  app.use(errorHandler(deps.logger));
  return app;
}

/** The public listener's request listener, with the Express app behind it (its routes: the OpenAPI check). */
export type PublicApp = RequestListener & { express: Express };

/**
 * The public listener (PORT), the only one the bank reaches: the webhook receiver (`/webhooks/*`), liveness
 * (`/healthz`) and its load balancer's readiness (`/readyz`: 503 while draining; no Temporal call from the internet).
 * Every other path, the merchant facade's included, is a 404. Holds no state of its own.
 * The webhooks, its hot path, are dispatched without Express when their request line is in the bank's form
 * (src/api/direct-routes.ts); any other spelling of them, and everything else, goes through Express.
 */
export function createPublicApp(deps: AppDeps): PublicApp {
  const middleware = listenerMiddleware(deps, 'public');
  const webhooks = [...financeApplicationWebhookRoutes(deps), ...accountWebhookRoutes(deps)];
  const app = baseApp(middleware);
  app.use(directRoutesRouter(webhooks));
  app.use(livenessRoutes());
  app.use(receiverReadinessRoutes(deps));
  finish(app, deps);
  const listener = directDispatch({
    routes: webhooks,
    app,
    before: middleware,
    onError: (err, req, res) => answerError(deps.logger, err, req, res),
  });
  return Object.assign(listener, { express: app });
}

/**
 * The internal listener (INTERNAL_PORT), for merchants and operators, never exposed to the bank or the internet:
 * the merchant facade behind an API key (`authenticate`: `Authorization: Bearer <key>`), and, open, `/readyz`
 * and `/metrics` (probes and scrapers cannot send a key; the listener itself is the boundary), `/healthz`, and the
 * API description (`/openapi.json`, the `/docs` reference page).
 */
export function createInternalApp(deps: AppDeps, options: InternalAppOptions = {}): Express {
  const app = baseApp(listenerMiddleware(deps, 'internal'));
  app.use(livenessRoutes());
  app.use(operatorRoutes(deps));
  app.use(apiDocsRoutes({ document: openApiJson }));
  const extra = typeof options.extraRouters === 'function' ? options.extraRouters(deps) : options.extraRouters;
  for (const router of extra ?? []) app.use(router);
  // Every facade path needs a key, matched or not: no 404-versus-401 difference tells a caller what exists. The
  // merchant's request budget right after: an unauthenticated request never spends a merchant's.
  app.use(['/applications', '/consents'], authenticate(deps), requestBudget(deps));
  app.use(consentRefreshRoutes(deps));
  app.use(consentRoutes(deps));
  app.use(financeApplicationRoutes(deps));
  return finish(app, deps);
}
