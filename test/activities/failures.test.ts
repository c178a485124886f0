import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  BankInvalidResponseError,
  BankRateLimitedError,
  BankRejectedError,
  BankUnauthorizedError,
  BankUnavailableError,
} from '../../src/activities/bank/errors';
import { MAX_RATE_LIMIT_DELAY_MS, toApplicationFailure } from '../../src/activities/failures';
import { BankFailureType, NON_RETRYABLE_BANK_FAILURES } from '../../src/shared/failure-types';
import { BANK_ACTIVITY_OPTIONS } from '../../src/workflows/activity-options';

/** Pure unit tests of the one mapping function (the real-HTTP paths are in bank-client and sandbox tests). */
describe('toApplicationFailure', () => {
  const map = (err: unknown): ApplicationFailure => {
    const failure = toApplicationFailure(err);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    return failure as ApplicationFailure;
  };

  it.each([
    [new BankRejectedError('createApplication', 400, 'invalid_request', 'bad'), BankFailureType.Rejected, true],
    [new BankUnauthorizedError('getApplicationStatus', 401), BankFailureType.Unauthorized, true],
    [new BankRateLimitedError('startRefresh', 2000), BankFailureType.RateLimited, false],
    [new BankUnavailableError('startRefresh', 'down', { status: 503 }), BankFailureType.Unavailable, false],
    [new BankInvalidResponseError('createApplication', 200, 'x'), BankFailureType.InvalidResponse, true],
    // A 404 on the status read: the bank no longer knows the application (the workflow reports the anomaly).
    [new BankRejectedError('getApplicationStatus', 404, 'not_found', 'gone'), BankFailureType.ApplicationUnknown, true],
    // A 404 elsewhere is an ordinary refusal.
    [new BankRejectedError('startRefresh', 404, 'not_found', 'gone'), BankFailureType.Rejected, true],
  ])('%s → type and retryability', (err, type, nonRetryable) => {
    const failure = map(err);
    expect([failure.type, failure.nonRetryable]).toEqual([type, nonRetryable]);
    expect(failure.cause).toBe(err);
    // The retry policy agrees with the failure itself.
    expect(NON_RETRYABLE_BANK_FAILURES.includes(type)).toBe(nonRetryable);
    expect(BANK_ACTIVITY_OPTIONS.retry?.nonRetryableErrorTypes).toEqual(NON_RETRYABLE_BANK_FAILURES);
  });

  it('429 carries Retry-After as nextRetryDelay, capped; without it the policy backoff applies', () => {
    expect(map(new BankRateLimitedError('startRefresh', 1500)).nextRetryDelay).toBe(1500);
    expect(map(new BankRateLimitedError('startRefresh', 24 * 3600_000)).nextRetryDelay).toBe(MAX_RATE_LIMIT_DELAY_MS);
    expect(map(new BankRateLimitedError('startRefresh', undefined)).nextRetryDelay).toBeUndefined();
  });

  it('details carry the status, the bank error and code for the workflow and the Web UI', () => {
    expect(map(new BankRejectedError('createApplication', 422, 'invalid_request', 'redirectUrl')).details).toEqual([
      { operation: 'createApplication', status: 422, bankError: 'invalid_request', bankMessage: 'redirectUrl' },
    ]);
    expect(map(new BankUnavailableError('token', 'x', { code: 'ECONNRESET' })).details).toEqual([
      { operation: 'token', status: undefined, code: 'ECONNRESET' },
    ]);
  });

  it('leaves everything else alone: cancellations, ApplicationFailures, bugs', () => {
    const cancelled = new CancelledFailure('CANCELLED');
    const failure = ApplicationFailure.nonRetryable('x', 'Other');
    const bug = new TypeError('undefined is not a function');
    expect(toApplicationFailure(cancelled)).toBe(cancelled);
    expect(toApplicationFailure(failure)).toBe(failure);
    expect(toApplicationFailure(bug)).toBe(bug);
  });
});
