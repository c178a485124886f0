import type { Router } from 'express';
import { FinanceApplicationWaits } from '../../../client/finance-applications';
import { jsonBody } from '../../json-body';
import { merchantBudgets, type MerchantBudgets } from '../../budgets';
import { tracedRouter } from '../../../telemetry/express-routes';
import { listApplications, readApplication, startApplication, type FinanceApplicationRouteDeps } from './handlers';

/**
 * The merchant facade over src/client/finance-applications.ts:
 * - `POST /applications` → 201 with Location (200 when the reference already existed with the same body)
 *   `{ merchantReference, workflowId, financeApplicationId, bank }`; 400 when `callbackUrl` is outside
 *   the merchant's allow-list (here, or in the worker's verdict), 409 when the reference exists with another body,
 *   422 when the bank refused the application, 502 when it could not be reached; 429 over the merchant's creations
 *   per minute or its open applications (a reference that exists is never refused for the latter).
 * - `GET /applications/:ref` → `{ merchantReference, financeApplicationId, status, done, history }`; 404 unknown.
 *   With `?waitForChangeFrom=<STATUS>&timeout=30s`: the same answer once the status differs (or at the timeout,
 *   the status unchanged), with the Wait-Outcome header; 429 with Retry-After when the application takes no more
 *   waits, or the merchant holds its maxLongPolls (src/api/budgets.ts). Waits of this process are shared: one update per application and from-status (FinanceApplicationWaits).
 * - `GET /applications?status=&createdAfter=&createdBefore=&referencePrefix=&pageSize=&pageToken=` →
 *   `{ applications: [{ merchantReference, financeApplicationId, status, done, createdAt }], nextPageToken }`.
 */
export function financeApplicationRoutes(
  deps: FinanceApplicationRouteDeps,
  budgets: MerchantBudgets = merchantBudgets(deps),
): Router {
  const router = tracedRouter();
  // Described in schemas.ts.
  router.get('/applications', listApplications(deps));
  // The creations budget first: a refused creation is not even read.
  router.post('/applications', budgets.creations, jsonBody({ limit: '256kb' }), startApplication(deps, budgets));
  router.get('/applications/:ref', readApplication(deps, new FinanceApplicationWaits(deps.client), budgets.longPolls));
  return router;
}
