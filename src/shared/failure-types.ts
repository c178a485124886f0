/**
 * `ApplicationFailure.type` values the bank activities throw. Workflows and retry policies branch on these
 * strings, never on error classes.
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

/** A merchant callback that may work later (5xx, 408, 429, network, timeout); retried by the retry policy. */
export const CALLBACK_UNAVAILABLE = 'MerchantCallbackUnavailable';

/**
 * A merchant callback still unavailable at the end of its merchant's retry window (MERCHANTS_FILE callbackRetryWindow,
 * else CALLBACK_RETRY_WINDOW): given up, not retried (src/shared/undelivered-callbacks.ts callbackRetry).
 */
export const CALLBACK_GIVEN_UP = 'MerchantCallbackGivenUp';

/** A merchant callback URL outside CALLBACK_ALLOWED_ORIGINS (or resolving to a non-public address): never sent. */
export const CALLBACK_NOT_ALLOWED = 'MerchantCallbackNotAllowed';

/** `ApplicationFailure.type` values the finance-application workflow and its update throw. */
export const FinanceApplicationFailureType = {
  /** The bank refused to create the application (its request was invalid or rejected). */
  CreateRejected: 'FinanceApplicationCreateRejected',
  /** The bank could not be reached to create the application within the activity's retries. */
  CreateFailed: 'FinanceApplicationCreateFailed',
  /** The callbackUrl is outside the merchant's allow-list on the worker (MERCHANTS_FILE, else CALLBACK_ALLOWED_ORIGINS): the bank was never called. */
  CallbackUrlNotAllowed: 'FinanceApplicationCallbackUrlNotAllowed',
  /** The workflow's input settings break their bounds (a caller's bug: the same input fails again). */
  InvalidInput: 'InvalidFinanceApplicationInput',
  /** The start update's argument is malformed (rejected by its validator). */
  InvalidUpdate: 'InvalidUpdate',
  /** A status wait refused: the run already holds STATUS_WAIT_LIMITS.maxWaitsPerRun waits (nothing recorded). */
  TooManyStatusWaits: 'FinanceApplicationTooManyStatusWaits',
  /** A status wait refused: its arguments are out of bounds. */
  InvalidStatusWait: 'FinanceApplicationInvalidStatusWait',
  /** A status wait refused: the run is continuing as new or ending (ask again: the next run takes it). */
  StatusWaitClosing: 'FinanceApplicationStatusWaitClosing',
} as const;

/** The consent refresh could not be started at the bank (the refresh workflow and the attachRefresh update fail with it). */
export const REFRESH_NOT_STARTED = 'RefreshNotStarted';

/**
 * A confirmation read's refusal: the other financeApplicationId on an application's webhook URL is another application
 * of this service (another merchant's, or another reference's), or cannot be looked up. Never a duplicate; not retried.
 */
export const NOT_THIS_REFERENCES = 'NotThisReferencesApplication';

/** A status read failed with something that is not a typed bank failure (the polling activity retries it). */
export const BANK_READ_FAILED = 'BankReadFailed';

/** The polling activity's benign "no new status yet": Temporal retries it after the poll policy's delay. */
export const POLL_STATUS_UNCHANGED = 'StatusUnchanged';
