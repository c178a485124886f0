import type { Router } from 'express';
import type { AuditLog } from '../../../audit/audit-log';
import { tracedRouter } from '../../../telemetry/express-routes';
import { operatorOf } from '../../authenticate';
import { HttpError, parseInput } from '../../problem-details';
import { sendAs } from '../../openapi/describe';
import { AuditPageSchema, AuditQuerySchema } from './schemas';

export interface OperatorAuditRouteDeps {
  audit: AuditLog;
}

/**
 * `GET /operator/audit`: the audit trail for operators (docs/operations.md#the-audit-trail), mounted behind an
 * operator key (createInternalApp puts authenticateOperator in front of /operator; a merchant's key gets its 401).
 * Filters since, until, action, actor, actorKind; pages by sequence number (`after`, `limit`) → `{ records, next }`.
 */
export function operatorAuditRoutes(deps: OperatorAuditRouteDeps): Router {
  const router = tracedRouter();

  // Described in schemas.ts.
  router.get('/operator/audit', async (req, res) => {
    // The operator key is checked in front of /operator; without it here, refuse rather than answer.
    if (operatorOf(res) === undefined) throw new HttpError(401, 'An operator key is required');
    const query = parseInput(AuditQuerySchema, req.query, 'query');
    let records;
    try {
      records = await deps.audit.query(query);
    } catch (err) {
      throw new HttpError(503, `The audit trail cannot be read: ${(err as Error).message}`, undefined, 5);
    }
    res.setHeader('Cache-Control', 'no-store');
    sendAs(res, 200, AuditPageSchema, {
      records,
      next: records.length === query.limit ? records.at(-1)!.sequence : null,
    });
  });

  return router;
}
