import type { RequestHandler } from 'express';
import {
  claimConsent,
  ConsentHeldByAnotherError,
  ConsentNotFoundError,
  consentOwner,
  releaseConsent,
} from '../../../client/consent-claims';
import type { Client } from '@temporalio/client';
import type { MerchantDirectory } from '../../../config/merchants';
import type { Logger } from '../../../telemetry/logging';
import type { ConsentAssignment } from '../../../shared/consent-assignment';
import type { Metrics } from '../../metrics';
import { ConsentClaimConflicts, consentAssignmentOf } from '../../consent-assignment';
import { scopeOf } from '../../authenticate';
import { withStartDeadline, type StartDeadlineDeps } from '../../deadlines';
import { HttpError, parseInput } from '../../problem-details';
import { sendAs } from '../../openapi/describe';
import { consentIdOf, notYours } from '../consent-refresh/handlers';
import { ConsentSchema, ClaimBody } from './schemas';
import { MerchantTotals, type BudgetDeps } from '../../budgets';

export interface ConsentRouteDeps extends StartDeadlineDeps, BudgetDeps {
  client: Client;
  taskQueue: string;
  merchants: Pick<MerchantDirectory, 'ids' | 'resolve'>;
  /** CONSENT_ASSIGNMENT's rule in force; absent: `auto` over the merchants (consentAssignmentOf). */
  consentAssignment?: ConsentAssignment;
  metrics: BudgetDeps['metrics'] & Pick<Metrics, 'consentClaimConflicts'>;
  logger: Logger;
}

/** `PUT /consents/:consentId`: the caller's consent, claimed now where merchants claim. */
export function putConsent(
  deps: ConsentRouteDeps,
  budgets: { totals: MerchantTotals },
  conflicts: ConsentClaimConflicts,
): RequestHandler {
  const selfClaim = consentAssignmentOf(deps) === 'merchant';
  return async (req, res) => {
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
      if (err instanceof ConsentHeldByAnotherError) conflicts.refused(err, scope.merchantId, 'claim');
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
  };
}

/** `GET /consents/:consentId`: 200 when the caller owns it. */
export function getConsent(deps: ConsentRouteDeps): RequestHandler {
  return async (req, res) => {
    const consentId = consentIdOf(req);
    const { merchantId } = scopeOf(res);
    if ((await consentOwner(deps.client, consentId)) !== merchantId) throw notYours(consentId);
    sendAs(res, 200, ConsentSchema, { consentId, merchantId, claimed: true });
  };
}

/** `DELETE /consents/:consentId`: released; its webhooks start nothing until it is assigned or claimed again. */
export function deleteConsent(deps: ConsentRouteDeps): RequestHandler {
  return async (req, res) => {
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
  };
}
