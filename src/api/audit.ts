import type { Response } from 'express';
import { AuditUnavailableError, type AuditLog } from '../audit/audit-log';
import type { AuditActor, AuditEntry, AuditRecord } from '../security/audit-chain';
import type { Logger } from '../telemetry/logging';
import { merchantOf, operatorOf } from './authenticate';
import { HttpError } from './problem-details';

/**
 * The API's side of the audit trail (docs/security.md#audit-trail): an audited action appends its record first, and
 * does not happen when the record cannot be written (503, Retry-After). A decode appends before any decoded byte is
 * sent; a change appends before the Temporal call that makes it, so a record says the action was asked for and let
 * through (the answer, and the workflow's history, say whether it then succeeded).
 */
export interface AuditDeps {
  /** The configured store (AUDIT_LOG; src/api/listeners.ts). createInternalApp puts a MemoryAuditLog when absent. */
  audit?: AuditLog;
  /** Absent: nothing logged (tests of a route alone). */
  logger?: Logger;
}

/** Seconds a caller is told to wait after the audit trail refused a record. */
const RETRY_AFTER_SECONDS = 5;

/** Appends the record of an action about to happen; throws the 503 that stops it when the store cannot take it. */
export async function recordAction(deps: AuditDeps, entry: AuditEntry): Promise<AuditRecord> {
  if (!deps.audit) throw new Error('an audited route reached without an audit log (createInternalApp sets one)');
  let record: AuditRecord;
  try {
    record = await deps.audit.append(entry);
  } catch (err) {
    const reason = err instanceof AuditUnavailableError ? err.reason : (err as Error).message;
    deps.logger?.error(
      { action: entry.action, actor: entry.actor.name, audit: deps.audit.location, cause: reason },
      'audit trail not written: the action was refused',
    );
    throw new HttpError(
      503,
      'The audit trail cannot be written, so this action was not done; retry later',
      undefined,
      RETRY_AFTER_SECONDS,
    );
  }
  // The head in the log too: a trail cut short at its end is found against it (docs/operations.md#the-audit-trail).
  deps.logger?.info(
    { action: record.action, actor: record.actor.name, auditSequence: record.sequence, auditHash: record.hash },
    'audit record appended',
  );
  return record;
}

/** The operator behind an operator route (authenticateOperator ran). */
export function operatorActor(res: Response): AuditActor {
  const name = operatorOf(res);
  if (name === undefined) throw new Error('operator route reached without an authenticated operator');
  return { kind: 'operator', name };
}

/** The merchant behind a facade route (authenticate ran). */
export function merchantActor(res: Response): AuditActor {
  const name = merchantOf(res);
  if (name === undefined) throw new Error('merchant route reached without an authenticated merchant');
  return { kind: 'merchant', name };
}
