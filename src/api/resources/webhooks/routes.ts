import type { Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import { accountWebhook, type AccountWebhookDeps } from './accounts';
import { financeApplicationWebhook, type FinanceApplicationWebhookDeps } from './finance-applications';

export type WebhookRouteDeps = FinanceApplicationWebhookDeps & AccountWebhookDeps;

/**
 * The bank's webhooks on the public listener, each through the one receiver pipeline (receiver.ts); their bodies
 * and operations are in schemas.ts. The finance webhook's hash comes in the path or in the query.
 */
export function webhookRoutes(deps: WebhookRouteDeps): Router {
  const router = tracedRouter();
  const receiveFinanceApplication = financeApplicationWebhook(deps);
  router.post('/webhooks/finance-applications/:ref/:hash', receiveFinanceApplication);
  router.post('/webhooks/finance-applications/:ref', receiveFinanceApplication);
  router.post('/webhooks/accounts', accountWebhook(deps));
  return router;
}
