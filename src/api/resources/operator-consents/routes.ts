import express, { type Router } from 'express';
import type { Client } from '@temporalio/client';
import {
  assignConsent,
  consentAssignment,
  ConsentHeldByAnotherError,
  ConsentNotFoundError,
  releaseConsentAsOperator,
} from '../../../client/consent-claims';
import type { MerchantDirectory } from '../../../config/merchants';
import type { Logger } from '../../../telemetry/logging';
import { tracedRouter } from '../../../telemetry/express-routes';
import { operatorOf } from '../../authenticate';
import { operatorActor, recordAction, type AuditDeps } from '../../audit';
import { withReadDeadline, withStartDeadline, type StartDeadlineDeps } from '../../deadlines';
import {
  HttpError,
  parseInput,
  PROBLEM_TITLES,
  ProblemError,
  ProblemType,
  ValidationError,
} from '../../problem-details';
import { sendAs } from '../../openapi/describe';
import { AssignConsentBody, ConsentAssignedSchema, ConsentReleasedSchema, OperatorConsentSchema } from './schemas';
import { consentIdOf } from '../consent-refresh/routes';

export interface OperatorConsentRouteDeps extends StartDeadlineDeps, AuditDeps {
  client: Client;
  taskQueue: string;
  merchants: Pick<MerchantDirectory, 'ids'>;
  readDeadlineMs?: number;
  logger: Logger;
}

const notClaimed = (consentId: string) => new HttpError(404, `No merchant owns consent ${consentId}`);

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
  router.put('/operator/consents/:consentId', express.json({ limit: '1kb' }), async (req, res) => {
    const consentId = consentIdOf(req);
    if (!req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const body = parseInput(AssignConsentBody, req.body ?? {}, 'body');
    if (!deps.merchants.ids().includes(body.merchantId))
      throw new ValidationError([
        {
          in: 'body',
          field: 'merchantId',
          pointer: '#/merchantId',
          detail: `no merchant "${body.merchantId}" in MERCHANT_API_KEYS`,
        },
      ]);
    const actor = operatorActor(res);
    const operator = actor.name;
    await recordAction(deps, {
      actor,
      action: 'consent.assign',
      target: { kind: 'consent', id: consentId },
      details: { merchantId: body.merchantId, reassign: body.reassign ?? false },
    });
    let assigned;
    try {
      assigned = await withStartDeadline(deps, 'Assigning the consent', () =>
        assignConsent(
          deps.client,
          consentId,
          { merchantId: body.merchantId, operator, reassign: body.reassign },
          { taskQueue: deps.taskQueue },
        ),
      );
    } catch (err) {
      if (err instanceof ConsentHeldByAnotherError)
        throw new ProblemError(
          409,
          ProblemType.Conflict,
          PROBLEM_TITLES[ProblemType.Conflict],
          `Consent ${consentId} is merchant "${err.owner}"'s: send "reassign": true to give it to "${body.merchantId}"`,
          { details: { owner: err.owner } },
        );
      throw err;
    }
    deps.logger.info(
      {
        operator,
        merchant: assigned.merchantId,
        consentId,
        assignedNow: assigned.assignedNow,
        previousMerchant: assigned.previousMerchantId ?? undefined,
      },
      'consent assigned by an operator',
    );
    if (assigned.assignedNow) res.setHeader('Location', `/operator/consents/${encodeURIComponent(consentId)}`);
    sendAs(res, assigned.assignedNow ? 201 : 200, ConsentAssignedSchema, assigned);
  });

  router.get('/operator/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req);
    const claim = await withReadDeadline(deps, 'Reading the consent', () => consentAssignment(deps.client, consentId));
    if (!claim) throw notClaimed(consentId);
    sendAs(res, 200, OperatorConsentSchema, {
      consentId,
      merchantId: claim.merchantId,
      claimedAt: claim.claimedAt,
      assignedBy: claim.assignedBy ?? null,
      conflicts: claim.conflicts ?? [],
    });
  });

  router.delete('/operator/consents/:consentId', async (req, res) => {
    const consentId = consentIdOf(req);
    await recordAction(deps, {
      actor: operatorActor(res),
      action: 'consent.release',
      target: { kind: 'consent', id: consentId },
      details: {},
    });
    let released;
    try {
      released = await releaseConsentAsOperator(deps.client, consentId);
    } catch (err) {
      if (err instanceof ConsentNotFoundError) throw notClaimed(consentId);
      throw err;
    }
    deps.logger.info(
      { operator: operatorOf(res), merchant: released.merchantId, consentId },
      'consent released by an operator',
    );
    sendAs(res, 200, ConsentReleasedSchema, { consentId, merchantId: released.merchantId, released: true });
  });

  return router;
}
