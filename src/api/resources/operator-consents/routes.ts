import express, { type Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import { putAssignment, getAssignment, deleteAssignment, type OperatorConsentRouteDeps } from './handlers';

/**
 * Operators assign consents to merchants (docs/decisions/0046-consents-assigned-by-an-operator.md,
 * docs/operations.md "Assigning consents"), on the internal listener, mounted behind an operator key
 * (createInternalApp puts authenticateOperator in front of /operator: a merchant's key is refused). Each assignment
 * and release is recorded in the audit trail first (src/api/audit.ts), then is one call of src/client/consent-claims.ts:
 * - `PUT /operator/consents/:consentId` `{ merchantId, reassign? }` → 201 assigned (Location), 200 already that
 *   merchant's `{ consentId, merchantId, assignedNow, previousMerchantId }`; 409 another merchant's (without reassign);
 *   400 a merchant not in MERCHANT_API_KEYS.
 * - `GET /operator/consents/:consentId` → 200 `{ consentId, merchantId, claimedAt, assignedBy, conflicts }`; 404.
 * - `DELETE /operator/consents/:consentId` → 200 `{ consentId, merchantId, released: true }`; 404 nobody owns it.
 */
export function operatorConsentRoutes(deps: OperatorConsentRouteDeps): Router {
  const router = tracedRouter();

  // Described in schemas.ts.
  router.put('/operator/consents/:consentId', express.json({ limit: '1kb' }), putAssignment(deps));

  router.get('/operator/consents/:consentId', getAssignment(deps));

  router.delete('/operator/consents/:consentId', deleteAssignment(deps));

  return router;
}
