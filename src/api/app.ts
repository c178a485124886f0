import express, { type Express, type RequestHandler } from 'express';
import type { Client } from '@temporalio/client';
import type { WebhookSecrets } from '../config';
import type { Logger } from '../telemetry/logging';
import type { MerchantDirectory } from '../config/merchants';
import { loggablePath } from '../security/redaction';
import type { MerchantApiKey, OperatorApiKey } from '../security/api-keys';
import type { ServiceSettings } from '../shared/application-settings';
import { authenticate, authenticateOperator } from './authenticate';
import { merchantBudgets } from './budgets';
import { ConsentClaimConflicts } from './consent-assignment';
import { FailedAuthentications } from './auth-failures';
import { errorHandler, HttpError, PROBLEM_TITLES, ProblemError, ProblemType } from './problem-details';
import { requestLog, type Middleware } from './request-log';
import type { Metrics } from './metrics';
import { livenessRoutes, operatorRoutes, receiverReadinessRoutes } from './resources/health/routes';
import type { DrainSignals } from './drain';
import { webhookRoutes } from './resources/webhooks/routes';
import { financeApplicationRoutes } from './resources/finance-applications/routes';
import { consentRefreshRoutes } from './resources/consent-refresh/routes';
import { consentRoutes } from './resources/consents/routes';
import { operatorConsentRoutes } from './resources/operator-consents/routes';
import type { ConsentAssignment } from '../shared/consent-assignment';
import { CALLBACK_SIGNING_SECRET_PATH, callbackSigningSecretRoutes } from './resources/callback-signing-secret/routes';
import { apiDocsRoutes } from './resources/api-docs/routes';
import { consoleRoutes } from './resources/console/routes';
import { openApiJson, ROUTE_MODULE_PATHS } from './openapi/document';
import { routeOf } from '../telemetry/express-routes';
import { methodLabel, OTHER_LABEL } from '../shared/metric-names';
import { MemoryAuditLog, type AuditLog } from '../audit/audit-log';
import { operatorAuditRoutes } from './resources/operator-audit/routes';
import { UNDELIVERED_CALLBACKS_PATH, undeliveredCallbackRoutes } from './resources/undelivered-callbacks/routes';

export { authenticate, authenticateOperator } from './authenticate';

/**
 * What the two apps are built from (src/api/listeners.ts builds it from the configuration; tests build their own).
 * No route imports it: each route module declares the narrow deps it needs, and this satisfies them all.
 */
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
   * callback and limits.
   */
  merchants: MerchantDirectory;
  /**
   * The operators' API keys (OPERATOR_API_KEYS), for every operator route (`authenticateOperator`: /codec); read
   * per request. Absent: none, so operator routes answer 401 (to a merchant key too).
   */
  operatorApiKeys?: readonly OperatorApiKey[];
  /**
   * The audit trail (AUDIT_LOG, docs/security.md#audit-trail): decodes, resends, secret rotations and consent
   * assignments are recorded in it before they happen, and refused (503) when it cannot be written. Absent: a trail
   * in memory for this app (tests); the entry points always pass the configured one (src/api/listeners.ts).
   */
  audit?: AuditLog;
  /** Who gives a consent its owner (CONSENT_ASSIGNMENT's rule); absent: `auto` over `merchants`. */
  consentAssignment?: ConsentAssignment;
  /**
   * Settings of the workflows this app starts (the environment's: config.settings); absent: the built-in defaults
   * (DEFAULT_SERVICE_SETTINGS). Merchants override some per request.
   */
  settings?: ServiceSettings;
  logger: Logger;
  /**
   * The process's one count of wrong keys per client address (FAILED_AUTHENTICATIONS_PER_15_MINUTES), for every
   * route that checks a key: the facade, /codec (`authenticateOperator(deps)`) and the console's sign-in. Absent: the
   * internal app makes one with the default limit for its facade and console (an operator route built from these
   * deps then counts apart).
   */
  authFailures?: FailedAuthentications;
  /** The merchant console's sessions per merchant (CONSOLE_SESSIONS_PER_MERCHANT); absent: its default. */
  consoleSessionsPerMerchant?: number;
  /** One registry for both listeners (served by the internal one's /metrics). */
  metrics: Metrics;
  /**
   * How long a merchant's start call (POST /applications, POST /consents/:id/refresh) may wait for the bank's
   * answer through the workflow before it gets a 503 telling it to retry (both are idempotent). Default 30 s.
   */
  startDeadlineMs?: number;
  /**
   * How long a merchant's plain read (GET /applications/:ref, a query a worker answers) waits before a 503 telling
   * it to retry: no worker running, or none of the build a closed run is pinned to. Default 10 s.
   */
  readDeadlineMs?: number;
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

/**
 * What every request of a listener goes through before its route, as one middleware (one layer for Express to walk
 * on the webhooks' hot path): the request-duration metric, then the request log (with its id), which runs the rest.
 */
function listenerMiddleware(deps: Pick<AppDeps, 'metrics' | 'logger'>, listener: Listener): Middleware {
  const log = requestLog(deps.logger, listener);
  return (req, res, next) => {
    // The method comes from the client: a fixed set, anything else `other` (bounded series).
    const end = deps.metrics.httpRequests.startTimer({ listener, method: methodLabel(req.method) });
    res.on('finish', () => {
      // The matched route pattern, never the raw path: references and hashes stay out of metric labels.
      end({ route: routeOf(req) ?? OTHER_LABEL, status: String(res.statusCode) });
    });
    log(req, res, next);
  };
}

/** What both listeners share, before their routes: Express settings and the listener's middleware. */
function baseApp(middleware: Middleware): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.use(middleware);
  return app;
}

/** The methods each described path of a listener has (from the route descriptions): a matcher and its `Allow`. */
function describedPaths(listener: Listener): { pattern: RegExp; methods: string[] }[] {
  const byPath = new Map<string, Set<string>>();
  for (const module of ROUTE_MODULE_PATHS) {
    for (const [path, item] of Object.entries(module)) {
      for (const [method, operation] of Object.entries(item)) {
        const served = (operation as { 'x-listener'?: string } | undefined)?.['x-listener'];
        if (served !== listener && served !== 'both') continue;
        const methods = byPath.get(path) ?? new Set<string>();
        methods.add(method.toUpperCase());
        if (method === 'get') methods.add('HEAD');
        byPath.set(path, methods);
      }
    }
  }
  return [...byPath].map(([path, methods]) => ({
    // Express's matching: case-insensitive, a trailing slash tolerated, `{x}` one segment.
    pattern: new RegExp(
      `^${path
        .split('/')
        .map((segment) => (/^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
        .join('/')}/?$`,
      'i',
    ),
    methods: [...methods],
  }));
}

/**
 * What both listeners share, after their routes: a 405 with `Allow` for a described path asked with another method,
 * a 404 for anything else, and the one error middleware (every answer a problem, src/api/problem-details.ts).
 */
function finish(app: Express, deps: Pick<AppDeps, 'logger'>, listener: Listener): Express {
  const described = describedPaths(listener);
  app.use((req, _res, next) => {
    const path = described.find((p) => p.pattern.test(req.path));
    if (path && !path.methods.includes(req.method)) {
      const allow = path.methods.join(', ');
      return next(
        new ProblemError(
          405,
          ProblemType.MethodNotAllowed,
          PROBLEM_TITLES[ProblemType.MethodNotAllowed],
          `${req.method} is not allowed on ${loggablePath(req.path)}; allowed: ${allow}`,
          { headers: { Allow: allow } },
        ),
      );
    }
    next(new HttpError(404, `No route for ${req.method} ${loggablePath(req.path)}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * The public listener (PORT), the only one the bank reaches: the webhook receiver (`/webhooks/*`), liveness
 * (`/healthz`) and its load balancer's readiness (`/readyz`: 503 while draining; no Temporal call from the internet).
 * Every other path, the merchant facade's included, is a 404. Holds no state of its own.
 * An Express app like the internal one. The webhooks, its hot path, come first after the request log and the
 * metric, and nothing else runs before them: no body parser (the receiver reads the raw body itself), no
 * authentication or budget (the merchant facade's, on the other listener).
 */
export function createPublicApp(deps: AppDeps): Express {
  const app = baseApp(listenerMiddleware(deps, 'public'));
  app.use(webhookRoutes(deps));
  app.use(livenessRoutes());
  app.use(receiverReadinessRoutes(deps));
  return finish(app, deps, 'public');
}

/**
 * The internal listener (INTERNAL_PORT), for merchants and operators, never exposed to the bank or the internet:
 * the merchant facade behind an API key (`authenticate`: `Authorization: Bearer <key>`); `/metrics` and `/readyz`'s
 * details behind an operator key (merchants reach this listener: src/api/resources/health/routes.ts); and, open,
 * `/healthz`, `/readyz`'s status (probes send no key) and the API description (`/openapi.json`, the `/docs` reference page).
 */
export function createInternalApp(deps: AppDeps, options: InternalAppOptions = {}): Express {
  // Set on the caller's deps, not a copy: the routes read keys from that object per request (a list swapped at runtime).
  const audit = (deps.audit ??= new MemoryAuditLog());
  const app = baseApp(listenerMiddleware(deps, 'internal'));
  app.use(livenessRoutes());
  app.use(operatorRoutes(deps));
  app.use(apiDocsRoutes({ document: openApiJson }));
  const extra = typeof options.extraRouters === 'function' ? options.extraRouters(deps) : options.extraRouters;
  for (const router of extra ?? []) app.use(router);
  // One set of merchant budgets for the facade and the console: a merchant spends the same ones through both; one
  // limit on wrong keys per client address for every merchant and operator route.
  const budgets = merchantBudgets(deps);
  const failures = deps.authFailures ?? new FailedAuthentications(deps);
  // Every /operator path needs an operator key, matched or not; then the operators' consent assignment
  // (/operator/consents) and the audit trail (/operator/audit).
  app.use('/operator', authenticateOperator({ ...deps, authFailures: failures }));
  app.use(operatorConsentRoutes(deps));
  app.use(operatorAuditRoutes({ audit }));
  // The merchant console (docs/console.md): its own session sign-in, under /console only; signed in, the budgets.
  app.use(consoleRoutes(deps, budgets, failures));
  // Every facade path needs a key, matched or not: no 404-versus-401 difference tells a caller what exists. The
  // merchant's request budget right after: an unauthenticated request never spends a merchant's.
  app.use(
    ['/applications', '/consents', CALLBACK_SIGNING_SECRET_PATH, UNDELIVERED_CALLBACKS_PATH],
    authenticate(deps, failures),
    budgets.requests,
  );
  // One record of refused consent claims for both routes: a conflict is recorded once per interval.
  const conflicts = new ConsentClaimConflicts(deps);
  app.use(consentRefreshRoutes(deps, budgets, conflicts));
  app.use(consentRoutes(deps, budgets, conflicts));
  app.use(financeApplicationRoutes(deps, budgets));
  // The caller's own callback signing secret (/merchant, under the key and budget above).
  app.use(callbackSigningSecretRoutes(deps));
  // The caller's undelivered callbacks and their bulk resend (/callbacks, under the key and budget above), and the
  // operators' list (/operator/callbacks/undelivered, under the operator key above).
  app.use(undeliveredCallbackRoutes(deps));
  return finish(app, deps, 'internal');
}
