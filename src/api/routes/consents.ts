import type { Router } from 'express';
import { jsonBody } from '../json-body';
import {
  claimConsent,
  ConsentHeldByAnotherError,
  ConsentNotFoundError,
  consentOwner,
  releaseConsent,
} from '../../client/consent-claims';
import type { Client } from '@temporalio/client';
import type { MerchantDirectory } from '../../config/merchants';
import type { Logger } from '../../telemetry/logging';
import type { ConsentAssignment } from '../../shared/consent-assignment';
import type { Metrics } from '../metrics';
import { consentAssignmentOf, refusedConsentClaim } from '../consent-assignment';
import { scopeOf } from '../authenticate';
import { withStartDeadline, type StartDeadlineDeps } from '../deadlines';
import { HttpError, parseInput } from '../problem-details';
import { sendAs } from '../descriptions/describe';
import { tracedRouter } from '../../telemetry/express-routes';
import { consentIdOf, notYours } from './consent-refresh';
import { ConsentSchema, ClaimBody } from '../descriptions/consents';
import { MerchantTotals, type BudgetDeps } from '../budgets';

export interface ConsentRouteDeps extends StartDeadlineDeps, BudgetDeps {
  client: Client;
  taskQueue: string;
  merchants: Pick<MerchantDirectory, 'ids' | 'resolve'>;
  /** CONSENT_ASSIGNMENT's rule in force; absent: `auto` over the merchants (consentAssignmentOf). */
  consentAssignment?: ConsentAssignment;
  metrics: BudgetDeps['metrics'] & Pick<Metrics, 'consentClaimConflicts'>;
  logger: Logger;
}

/**
 * A merchant's consents (docs/merchant-api.md, "Merchants"): the bank's account webhooks carry only the consent id, so a
 * consent belongs to the merchant its claim names, and only its owner receives its transactionEvents and late bank
 * reports. Who gives a consent its owner is CONSENT_ASSIGNMENT's rule (src/shared/consent-assignment.ts): an operator
 * (src/api/routes/operator-consents.ts), or the merchant itself by registering it here or by its first refresh.
 * Another merchant's consent answers exactly as an unknown one, on every route.
 * - `PUT /consents/:consentId` → 201 (claimed now, where merchants claim) or 200 (already the caller's)
 *   `{ consentId, merchantId, claimed }`; 404 when another merchant owns it, or (where operators assign) when it is
 *   not the caller's. A refused claim of another merchant's consent is recorded for operators (refusedConsentClaim).
 *   429 when the merchant holds its maxConsents.
 * - `GET /consents/:consentId` → 200 when the caller owns it, else 404.
 * - `DELETE /consents/:consentId` → 200 released (its webhooks start nothing until it is assigned or claimed again); 404.
 */
export function consentRoutes(
  deps: ConsentRouteDeps,
  budgets: { totals: MerchantTotals } = { totals: new MerchantTotals(deps) },
): Router {
  const router = tracedRouter();
  const selfClaim = consentAssignmentOf(deps) === 'merchant';

  // Described in src/api/descriptions/consents.ts.
  router.put('/consents/:consentId', jsonBody({ limit: '1kb' }), async (req, res) => {
    const consentId = consentIdOf(req);
    // No body (or `{}`): a body that is anything else is refused, not ignored.
    const hasContent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (hasContent && !req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    parseInput(ClaimBody, req.body ?? {}, 'body');
    const scope = scopeOf(res);
    // The merchant's claimed consents, counted in Temporal: at its most, only one it already holds passes.
    const admission = await budgets.totals.admit(
      res,
      scope,
      'consents',
      async () => (await consentOwner(deps.client, consentId)) === scope.merchantId,
    );
    let claim;
    try {
      claim = await withStartDeadline(deps, 'Claiming the consent', () =>
        claimConsent(deps.client, scope, consentId, { taskQueue: deps.taskQueue, selfClaim }),
      );
    } catch (err) {
      admission.settle(false);
      if (err instanceof ConsentHeldByAnotherError) refusedConsentClaim(deps, err, scope.merchantId, 'claim');
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      throw err;
    }
    admission.settle(claim.claimedNow);
    deps.logger.info({ merchant: scope.merchantId, consentId, claimedNow: claim.claimedNow }, 'consent claimed');
    if (claim.claimedNow) res.setHeader('Location', `/consents/${encodeURIComponent(consentId)}`);
    sendAs(res, claim.claimedNow ? 201 : 200, ConsentSchema, {
      consentId,
      merchantId: scope.merchantId,
      claimed: true,
    });
  });

  router.get('/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req);
    const { merchantId } = scopeOf(res);
    if ((await consentOwner(deps.client, consentId)) !== merchantId) throw notYours(consentId);
    sendAs(res, 200, ConsentSchema, { consentId, merchantId, claimed: true });
  });

  router.delete('/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req);
    const { merchantId } = scopeOf(res);
    try {
      await releaseConsent(deps.client, merchantId, consentId);
    } catch (err) {
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      throw err;
    }
    deps.logger.info({ merchant: merchantId, consentId }, 'consent released');
    sendAs(res, 200, ConsentSchema, { consentId, merchantId, claimed: false });
  });

  return router;
}
