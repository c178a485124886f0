import type { Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import { getAuditRecords, type OperatorAuditRouteDeps } from './handlers';

/**
 * `GET /operator/audit`: the audit trail for operators (docs/operations.md#the-audit-trail), mounted behind an
 * operator key (createInternalApp puts authenticateOperator in front of /operator; a merchant's key gets its 401).
 * Filters since, until, action, actor, actorKind; pages by sequence number (`after`, `limit`) → `{ records, next }`.
 */
export function operatorAuditRoutes(deps: OperatorAuditRouteDeps): Router {
  const router = tracedRouter();

  // Described in schemas.ts.
  router.get('/operator/audit', getAuditRecords(deps));

  return router;
}
