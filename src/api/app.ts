import express, { type Express } from 'express';
import type { Client } from '@temporalio/client';
import type { Logger } from '../logging';
import type { CallbackAllowList } from '../security/callback-url';
import { errorHandler, HttpError } from './errors';
import type { Metrics } from './metrics';
import { healthRoutes } from './routes/health';
import { financeApplicationWebhookRoutes } from './routes/finance-application-webhooks';
import { financeApplicationRoutes } from './routes/finance-applications';
import { accountWebhookRoutes } from './routes/account-webhooks';
import { consentRefreshRoutes } from './routes/consent-refresh';

export interface AppDeps {
  /** Temporal client: every route is one call through it. */
  client: Client;
  taskQueue: string;
  webhooks: { publicBaseUrl: string; hashSecret: string; securityHeader: string };
  /** Where transactionEvent workflows deliver changed accounts (TRANSACTIONS_CALLBACK_URL); optional. */
  transactionsCallbackUrl?: string;
  /** Origins a merchant's `callbackUrl` may use (CALLBACK_ALLOWED_ORIGINS); absent: none. */
  callbackAllowList?: CallbackAllowList;
  logger: Logger;
  metrics: Metrics;
  /**
   * How long a merchant's start call (POST /applications, POST /consents/:id/refresh) may wait for the bank's
   * answer through the workflow before it gets a 503 telling it to retry (both are idempotent). Default 30 s.
   */
  startDeadlineMs?: number;
  /** Readiness: resolves when Temporal answers. */
  checkTemporal(): Promise<void>;
}

/** Builds the one Express app: receiver, merchant facade and health. Holds no state of its own. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);

  app.use((req, res, next) => {
    const end = deps.metrics.httpRequests.startTimer({ method: req.method });
    res.on('finish', () => {
      // The matched route pattern, never the raw path: references and hashes stay out of metric labels.
      const route = (req.route as { path?: string } | undefined)?.path;
      end({ route: route ? `${req.baseUrl}${route}` : 'unmatched', status: String(res.statusCode) });
    });
    next();
  });

  // The bank's webhooks first: they are the hot path, and no other route matches their paths.
  app.use(financeApplicationWebhookRoutes(deps));
  app.use(accountWebhookRoutes(deps));
  app.use(healthRoutes(deps));
  app.use(consentRefreshRoutes(deps));
  app.use(financeApplicationRoutes(deps));

  app.use((req, _res, next) => next(new HttpError(404, `No route for ${req.method} ${req.path}`)));
  app.use(errorHandler(deps.logger));
  return app;
}
