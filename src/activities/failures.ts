import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { BankFailureType } from '../shared/failure-types';
import {
  BankError,
  BankInvalidResponseError,
  BankRateLimitedError,
  BankRejectedError,
  BankUnauthorizedError,
  BankUnavailableError,
} from './bank/errors';

/**
 * Longest Retry-After we honour: a bank asking for more (or a far-future HTTP date) would park the activity
 * past its scheduleToCloseTimeout; retrying earlier only costs one more 429.
 */
export const MAX_RATE_LIMIT_DELAY_MS = 5 * 60_000;

/** Details attached to every bank ApplicationFailure (details[0]), for workflows and the Web UI. */
export interface BankFailureDetails {
  operation: string;
  status?: number;
  code?: string;
  bankError?: string;
  bankMessage?: string;
  retryAfterMs?: number;
}

/**
 * The one place bank errors become ApplicationFailure (docs/decisions/0011-bank-errors.md). Workflows branch on
 * `failure.type` (src/shared/failure-types.ts). Anything that is not a bank error (cancellation, an ApplicationFailure
 * already, a bug) is returned unchanged.
 */
export function toApplicationFailure(err: unknown): unknown {
  if (!(err instanceof BankError)) return err;
  const details: BankFailureDetails = { operation: err.operation, status: err.status };

  if (err instanceof BankRejectedError && err.status === 404 && err.operation === 'getApplicationStatus') {
    return ApplicationFailure.create({
      type: BankFailureType.ApplicationUnknown,
      message: err.message,
      nonRetryable: true,
      // The workflow reports it once (a status, a metric, one log line); the SDK need not log every read at error.
      category: ApplicationFailureCategory.BENIGN,
      details: [{ ...details, bankError: err.bankError, bankMessage: err.bankMessage }],
      cause: err,
    });
  }
  if (err instanceof BankRejectedError) {
    return ApplicationFailure.create({
      type: BankFailureType.Rejected,
      message: err.message,
      nonRetryable: true,
      details: [{ ...details, bankError: err.bankError, bankMessage: err.bankMessage }],
      cause: err,
    });
  }
  if (err instanceof BankUnauthorizedError) {
    return ApplicationFailure.create({
      type: BankFailureType.Unauthorized,
      message: err.message,
      nonRetryable: true,
      details: [details],
      cause: err,
    });
  }
  if (err instanceof BankRateLimitedError) {
    const delay = err.retryAfterMs === undefined ? undefined : Math.min(err.retryAfterMs, MAX_RATE_LIMIT_DELAY_MS);
    return ApplicationFailure.create({
      type: BankFailureType.RateLimited,
      message: err.message,
      nonRetryable: false,
      // Without Retry-After the retry policy's own backoff applies.
      nextRetryDelay: delay,
      details: [{ ...details, retryAfterMs: delay }],
      cause: err,
    });
  }
  if (err instanceof BankUnavailableError) {
    return ApplicationFailure.create({
      type: BankFailureType.Unavailable,
      message: err.message,
      nonRetryable: false,
      details: [{ ...details, code: err.code }],
      cause: err,
    });
  }
  if (err instanceof BankInvalidResponseError) {
    return ApplicationFailure.create({
      type: BankFailureType.InvalidResponse,
      message: err.message,
      nonRetryable: true,
      details: [details],
      cause: err,
    });
  }
  return err;
}
