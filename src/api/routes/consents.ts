import type { Router } from 'express';
import { jsonBody } from '../json-body';
import { claimConsent, ConsentNotFoundError, consentOwner, releaseConsent } from '../../client/consent-claims';
import type { Client } from '@temporalio/client';
import type { MerchantDirectory } from '../../config/merchants';
import type { Logger } from '../../telemetry/logging';
import { scopeOf } from '../authenticate';
import { withStartDeadline, type StartDeadlineDeps } from '../deadlines';
import { HttpError, parseInput } from '../problem-details';
import { sendAs } from '../descriptions/describe';
import { tracedRouter } from '../../telemetry/express-routes';
import { consentIdOf, notYours } from './consent-refresh';
import { ConsentSchema, ClaimBody } from '../descriptions/consents';

export interface ConsentRouteDeps extends StartDeadlineDeps {
  client: Client;
  taskQueue: string;
  merchants: Pick<MerchantDirectory, 'legacyMerchantId'>;
  logger: Logger;
}

/**
 * A merchant's consents (docs/merchant-api.md, "Merchants"): the bank's account webhooks carry only the consent id, so a consent
 * belongs to the merchant that claimed it first, and only its owner receives its transactionEvents and late bank
 * reports. A refresh claims the consent too; registering it claims it before any refresh.
 * - `PUT /consents/:consentId` → 201 (claimed now) or 200 (already the caller's) `{ consentId, merchantId, claimed }`;
 *   404 when another merchant owns it (nothing tells that it exists).
 * - `GET /consents/:consentId` → 200 when the caller owns it, else 404.
 * - `DELETE /consents/:consentId` → 200 released (its webhooks start nothing until a merchant claims it again); 404.
 */
export function consentRoutes(deps: ConsentRouteDeps): Router {
  const router = tracedRouter();

  // Described in src/api/descriptions/consents.ts.
  router.put('/consents/:consentId', jsonBody({ limit: '1kb' }), async (req, res) => {
    const consentId = consentIdOf(req);
    // No body (or `{}`): a body that is anything else is refused, not ignored.
    const hasContent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (hasContent && !req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    parseInput(ClaimBody, req.body ?? {}, 'body');
    const scope = scopeOf(res, deps.merchants);
    let claim;
    try {
      claim = await withStartDeadline(deps, 'Claiming the consent', () =>
        claimConsent(deps.client, scope, consentId, { taskQueue: deps.taskQueue }),
      );
    } catch (err) {
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      throw err;
    }
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
    const { merchantId } = scopeOf(res, deps.merchants);
    if ((await consentOwner(deps.client, consentId)) !== merchantId) throw notYours(consentId);
    sendAs(res, 200, ConsentSchema, { consentId, merchantId, claimed: true });
  });

  router.delete('/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req);
    const { merchantId } = scopeOf(res, deps.merchants);
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
