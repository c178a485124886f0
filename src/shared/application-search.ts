/**
 * The visibility query behind GET /applications and listFinanceApplications: plain code, no I/O. Every value
 * that reaches the query is checked against a strict pattern and then quoted, so no caller's input is ever
 * read as query syntax. (Not imported by workflow code.)
 */
import { financeApplicationWorkflowType } from './finance-application';
import { MERCHANT_ID_PATTERN } from './ids';

/** Statuses the filter accepts: the bank's vocabulary is configurable, so any short word of these characters. */
export const STATUS_FILTER_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
/** A reference prefix: the characters of a merchant reference (src/shared/ids.ts), 1 to 128 of them. */
export const REFERENCE_PREFIX_PATTERN = /^[A-Za-z0-9._~-]{1,128}$/;

/** Page size of a listing: 50 unless asked, at most 100. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

export interface ApplicationSearchFilter {
  /** The latest recorded status (search attribute FinanceApplicationStatus), exactly. */
  status?: string;
  /** Created at or after this instant (inclusive). */
  createdAfter?: Date;
  /** Created before this instant (exclusive). */
  createdBefore?: Date;
  /** Merchant references starting with this (STARTS_WITH on MerchantReference). */
  referencePrefix?: string;
}

/**
 * A string literal of the visibility query language. Values are validated before they get here; this refuses
 * anything that could still end the literal (a quote, a backslash, a control character) instead of guessing
 * at the server's escaping rules.
 */
export function quoteLiteral(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (/['"\\\u0000-\u001f\u007f]/.test(value)) {
    throw new RangeError('A visibility query value may not contain quotes, backslashes or control characters');
  }
  return `'${value}'`;
}

/** An instant as the query's Datetime literal (RFC 3339, UTC). */
function instant(name: string, value: Date): string {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new RangeError(`${name} is not a valid date`);
  return quoteLiteral(value.toISOString());
}

/**
 * The time window on the application's creation: FinanceApplicationCreatedAt, set at the start and carried over
 * on continue-as-new; runs started before it existed have none, and their StartTime stands in (exact unless they
 * continued as new).
 */
function createdClause(op: '>=' | '<', at: string): string {
  return `(FinanceApplicationCreatedAt ${op} ${at} OR (FinanceApplicationCreatedAt IS NULL AND StartTime ${op} ${at}))`;
}

/**
 * The query listing finance applications by the filter: only the finance-application workflow type; only the
 * latest run of each (a run that continued as new is not listed, its successor is); no run whose creation failed
 * (the bank has no application for it, and the same reference may be started again: ALLOW_DUPLICATE_FAILED_ONLY);
 * only the merchant's own applications.
 * Throws RangeError on a value outside its pattern (the facade answers 400 before this).
 */
export function applicationSearchQuery(filter: ApplicationSearchFilter, merchant: { merchantId: string }): string {
  if (!MERCHANT_ID_PATTERN.test(merchant.merchantId))
    throw new RangeError(`merchantId must match ${MERCHANT_ID_PATTERN}`);
  const own = `MerchantId = ${quoteLiteral(merchant.merchantId)}`;
  const clauses = [
    `WorkflowType = ${quoteLiteral(financeApplicationWorkflowType)}`,
    // Tenancy: only the merchant's own.
    own,
    `ExecutionStatus != 'ContinuedAsNew'`,
    `ExecutionStatus != 'Failed'`,
  ];
  if (filter.status !== undefined) {
    if (!STATUS_FILTER_PATTERN.test(filter.status)) throw new RangeError(`status must match ${STATUS_FILTER_PATTERN}`);
    clauses.push(`FinanceApplicationStatus = ${quoteLiteral(filter.status)}`);
  }
  if (filter.referencePrefix !== undefined) {
    if (!REFERENCE_PREFIX_PATTERN.test(filter.referencePrefix)) {
      throw new RangeError(`referencePrefix must match ${REFERENCE_PREFIX_PATTERN}`);
    }
    clauses.push(`MerchantReference STARTS_WITH ${quoteLiteral(filter.referencePrefix)}`);
  }
  if (filter.createdAfter !== undefined)
    clauses.push(createdClause('>=', instant('createdAfter', filter.createdAfter)));
  if (filter.createdBefore !== undefined) {
    clauses.push(createdClause('<', instant('createdBefore', filter.createdBefore)));
  }
  return clauses.join(' AND ');
}
