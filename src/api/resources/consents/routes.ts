import type { Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import { jsonBody } from '../../json-body';
import { MerchantTotals } from '../../budgets';
import { ConsentClaimConflicts } from '../../consent-assignment';
import { putConsent, getConsent, deleteConsent, type ConsentRouteDeps } from './handlers';

/**
 * A merchant's consents (docs/merchant-api.md, "Merchants"): the bank's account webhooks carry only the consent id, so a
 * consent belongs to the merchant its claim names, and only its owner receives its transactionEvents and late bank
 * reports. Who gives a consent its owner is CONSENT_ASSIGNMENT's rule (src/shared/consent-assignment.ts): an operator
 * (src/api/resources/operator-consents/routes.ts), or the merchant itself by registering it here or by its first refresh.
 * Another merchant's consent answers exactly as an unknown one, on every route.
 * - `PUT /consents/:consentId` → 201 (claimed now, where merchants claim) or 200 (already the caller's)
 *   `{ consentId, merchantId, claimed }`; 404 when another merchant owns it, or (where operators assign) when it is
 *   not the caller's. A refused claim of another merchant's consent is recorded for operators (ConsentClaimConflicts).
 *   429 when the merchant holds its maxConsents.
 * - `GET /consents/:consentId` → 200 when the caller owns it, else 404.
 * - `DELETE /consents/:consentId` → 200 released (its webhooks start nothing until it is assigned or claimed again); 404.
 */
export function consentRoutes(
  deps: ConsentRouteDeps,
  budgets: { totals: MerchantTotals } = { totals: new MerchantTotals(deps) },
  conflicts: ConsentClaimConflicts = new ConsentClaimConflicts(deps),
): Router {
  const router = tracedRouter();

  // Described in schemas.ts.
  router.put('/consents/:consentId', jsonBody({ limit: '1kb' }), putConsent(deps, budgets, conflicts));

  router.get('/consents/:consentId', getConsent(deps));

  router.delete('/consents/:consentId', deleteConsent(deps));

  return router;
}
