import type { RequestHandler } from 'express';
import type { AuditLog } from '../../../audit/audit-log';
import { operatorOf } from '../../authenticate';
import { HttpError, parseInput } from '../../problem-details';
import { sendAs } from '../../openapi/describe';
import { AuditPageSchema, AuditQuerySchema } from './schemas';

export interface OperatorAuditRouteDeps {
  audit: AuditLog;
}

/** `GET /operator/audit`: a page of the audit trail, filtered. */
export function getAuditRecords(deps: OperatorAuditRouteDeps): RequestHandler {
  return async (req, res) => {
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
  };
}
