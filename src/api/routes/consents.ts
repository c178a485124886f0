import express, { type Router } from 'express';
import { z } from 'zod';
import { claimConsent, ConsentNotFoundError, consentOwner, releaseConsent } from '../../client/consent-claims';
import type { AppDeps } from '../app';
import { scopeOf } from '../authenticate';
import { withStartDeadline } from '../deadlines';
import { HttpError } from '../problem-details';
import { errors, json, merchantKeyRequired, sendAs, Tag, type ApiPaths } from '../openapi/describe';
import { tracedRouter } from '../../telemetry/express-routes';
import { ConsentParams, consentIdOf, notYours } from './consent-refresh';

/** A consent as its owner sees it. */
export const ConsentSchema = z
  .object({
    consentId: z.string(),
    merchantId: z.string().meta({ description: 'The owner: the merchant whose key made the call' }),
    claimed: z.boolean().meta({ description: 'False once released' }),
  })
  .meta({ id: 'Consent' });

/** PUT takes no body; `{}` is accepted as none. */
const ClaimBody = z.strictObject({}).meta({ id: 'ClaimConsentRequest' });

/**
 * A merchant's consents (README "Merchants"): the bank's account webhooks carry only the consent id, so a consent
 * belongs to the merchant that claimed it first, and only its owner receives its transactionEvents and late bank
 * reports. A refresh claims the consent too; registering it claims it before any refresh.
 * - `PUT /consents/:consentId` → 201 (claimed now) or 200 (already the caller's) `{ consentId, merchantId, claimed }`;
 *   404 when another merchant owns it (nothing tells that it exists).
 * - `GET /consents/:consentId` → 200 when the caller owns it, else 404.
 * - `DELETE /consents/:consentId` → 200 released (its webhooks start nothing until a merchant claims it again); 404.
 */
export function consentRoutes(deps: AppDeps): Router {
  const router = tracedRouter();

  // Described in consentPaths below.
  router.put('/consents/:consentId', express.json({ limit: '1kb' }), async (req, res) => {
    const consentId = consentIdOf(req.params.consentId);
    // No body (or `{}`): a body that is anything else is refused, not ignored.
    const hasContent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (hasContent && !req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    ClaimBody.parse(req.body ?? {});
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
    sendAs(res, claim.claimedNow ? 201 : 200, ConsentSchema, {
      consentId,
      merchantId: scope.merchantId,
      claimed: true,
    });
  });

  router.get('/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req.params.consentId);
    const { merchantId } = scopeOf(res, deps.merchants);
    if ((await consentOwner(deps.client, consentId)) !== merchantId) throw notYours(consentId);
    sendAs(res, 200, ConsentSchema, { consentId, merchantId, claimed: true });
  });

  router.delete('/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req.params.consentId);
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

/** OpenAPI description of this module's routes (src/api/openapi/document.ts). */
export const consentPaths: ApiPaths = {
  '/consents/{consentId}': {
    put: {
      'x-listener': 'internal',
      operationId: 'claimConsent',
      tags: [Tag.Consents],
      summary: 'Claim the consent for the calling merchant (idempotent)',
      description:
        'Account webhooks carry only the consent id: a consent belongs to the merchant that claimed it first, and ' +
        'only its owner receives its transactionEvents and late bank reports. A refresh claims the consent too; claim ' +
        'it here to receive its transactionEvents before any refresh. No body (or `{}`).',
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams },
      requestBody: { required: false, content: { 'application/json': { schema: ClaimBody } } },
      responses: {
        '201': json(ConsentSchema, 'Claimed by this call'),
        '200': json(ConsentSchema, "Already the caller's"),
        ...errors(
          [400, 'Invalid consentId, or a body other than {}'],
          401,
          [404, "Another merchant's consent"],
          413,
          415,
          429,
          503,
        ),
      },
    },
    get: {
      'x-listener': 'internal',
      operationId: 'getConsent',
      tags: [Tag.Consents],
      summary: "The consent, when it is the caller's",
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams },
      responses: {
        '200': json(ConsentSchema, "The caller's consent"),
        ...errors([400, 'Invalid consentId'], 401, [404, "Not claimed, or another merchant's"], 429, 503),
      },
    },
    delete: {
      'x-listener': 'internal',
      operationId: 'releaseConsent',
      tags: [Tag.Consents],
      summary: 'Release the consent: its account webhooks start nothing until a merchant claims it again',
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams },
      responses: {
        '200': json(ConsentSchema, 'Released'),
        ...errors([400, 'Invalid consentId'], 401, [404, "Not claimed, or another merchant's"], 429, 503),
      },
    },
  },
};
