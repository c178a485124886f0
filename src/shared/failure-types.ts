/**
 * `ApplicationFailure.type` values the bank activities throw. Workflows and retry policies branch on these
 * strings, never on error classes (STYLE.md, 5).
 */
export const BankFailureType = {
  /** 4xx other than 401/429: the bank refused the request; retrying the same request cannot help. */
  Rejected: 'BankRejected',
  /** 401/403 even after one fresh token, or the token endpoint refused our credentials. */
  Unauthorized: 'BankUnauthorized',
  /** 429: retried after the bank's Retry-After (nextRetryDelay). */
  RateLimited: 'BankRateLimited',
  /** 5xx, network error or timeout: retried with backoff. */
  Unavailable: 'BankUnavailable',
  /** 2xx whose body does not match the wire format: not retried (the same answer would come back). */
  InvalidResponse: 'BankInvalidResponse',
  /**
   * 404 on the status read of an application the bank created: the bank no longer knows it (an anomaly the workflow
   * reports: FinanceApplicationStatus UNKNOWN_AT_BANK). Not retried by the activity: the workflow paces the next read.
   */
  ApplicationUnknown: 'BankApplicationUnknown',
} as const;
export type BankFailureType = (typeof BankFailureType)[keyof typeof BankFailureType];

/** Failure types no retry can fix; listed in every bank activity's retry policy. */
export const NON_RETRYABLE_BANK_FAILURES: string[] = [
  BankFailureType.Rejected,
  BankFailureType.Unauthorized,
  BankFailureType.InvalidResponse,
  BankFailureType.ApplicationUnknown,
];

/** A merchant callback URL answered 4xx: not retried. */
export const CALLBACK_REJECTED = 'MerchantCallbackRejected';

/** A merchant callback URL outside CALLBACK_ALLOWED_ORIGINS (or resolving to a non-public address): never sent. */
export const CALLBACK_NOT_ALLOWED = 'MerchantCallbackNotAllowed';

/** The polling activity's benign "no new status yet": Temporal retries it after the poll policy's delay. */
export const POLL_STATUS_UNCHANGED = 'StatusUnchanged';
