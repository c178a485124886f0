import type { Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import { jsonBody } from '../../json-body';
import { merchantBudgets, type MerchantBudgets } from '../../budgets';
import { ConsentClaimConflicts } from '../../consent-assignment';
import { readRefresh, startRefresh, type ConsentRefreshRouteDeps } from './handlers';

/**
 * Merchant facade for consent refreshes, a thin layer over src/client/consent-refresh.ts:
 * - `POST /consents/:consentId/refresh` `{ expectedBankCodes?, timeout?, quietPeriod? }` → 202 `{ consentId,
 *   workflowId, taskId }` with Location (the progress below): starts a refresh or attaches to the running one (same taskId).
 *   Without expectedBankCodes, the refresh waits for the banks learned from the consent's earlier refreshes.
 *   The consent must be the caller's; where merchants claim (CONSENT_ASSIGNMENT), a free one becomes the caller's.
 * - `GET /consents/:consentId/refresh` → progress of the latest refresh, amended by its late bank reports
 *   (`late: true` banks, `lateReports`); 404 if none was ever started.
 * Another merchant's consent, or one not the caller's, answers as an unknown one (notYours) on both.
 */
export function consentRefreshRoutes(
  deps: ConsentRefreshRouteDeps,
  budgets: Pick<MerchantBudgets, 'refreshes' | 'totals'> = merchantBudgets(deps),
  conflicts: ConsentClaimConflicts = new ConsentClaimConflicts(deps),
): Router {
  const router = tracedRouter();
  const json = jsonBody({ limit: '16kb' });

  // Described in schemas.ts. The refreshes budget first: a refused one is not read.
  router.post('/consents/:consentId/refresh', budgets.refreshes, json, startRefresh(deps, budgets, conflicts));

  router.get('/consents/:consentId/refresh', readRefresh(deps));

  return router;
}
