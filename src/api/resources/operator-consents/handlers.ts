import type { RequestHandler } from 'express';
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
import { consentIdOf } from '../consent-refresh/handlers';

export interface OperatorConsentRouteDeps extends StartDeadlineDeps, AuditDeps {
  client: Client;
  taskQueue: string;
  merchants: Pick<MerchantDirectory, 'ids'>;
  readDeadlineMs?: number;
  logger: Logger;
}

const notClaimed = (consentId: string) => new HttpError(404, `No merchant owns consent ${consentId}`);

/** `PUT /operator/consents/:consentId`: gives the consent to a merchant (recorded in the audit trail first). */
export function putAssignment(deps: OperatorConsentRouteDeps): RequestHandler {
  return async (req, res) => {
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
  };
}

/** `GET /operator/consents/:consentId`: the consent's owner. */
export function getAssignment(deps: OperatorConsentRouteDeps): RequestHandler {
  return async (req, res) => {
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
  };
}

/** `DELETE /operator/consents/:consentId`: takes the consent from its owner. */
export function deleteAssignment(deps: OperatorConsentRouteDeps): RequestHandler {
  return async (req, res) => {
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
  };
}
