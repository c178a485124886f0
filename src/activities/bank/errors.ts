/**
 * Typed errors thrown by the bank client. Only src/activities/failures.ts turns them into ApplicationFailure; workflows
 * never see these classes (they branch on failure types). No message or field ever carries a token or the secret.
 */

/** Longest piece of a bank response body kept in an error (docs/bank-interface.md 7: bodies not shown, so capped). */
export const MAX_ERROR_BODY_CHARS = 512;

export type BankOperation = 'token' | 'createApplication' | 'getApplicationStatus' | 'startRefresh';

export abstract class BankError extends Error {
  /** HTTP status when the bank answered; undefined for network errors and timeouts. */
  readonly status: number | undefined;

  protected constructor(
    readonly operation: BankOperation,
    message: string,
    status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: ${message}`, options);
    this.name = new.target.name;
    this.status = status;
  }
}

/** 4xx other than 401/429: the bank refused this request; resending it cannot help. */
export class BankRejectedError extends BankError {
  constructor(
    operation: BankOperation,
    status: number,
    /** The bank's `error` code from a `{ error, message }` body, when present. */
    readonly bankError: string | undefined,
    /** The bank's message, or the truncated raw body when it is not the documented shape. */
    readonly bankMessage: string | undefined,
  ) {
    super(operation, `bank rejected the request with HTTP ${status}${bankMessage ? `: ${bankMessage}` : ''}`, status);
  }
}

/** 401 after one retry with a fresh token, 403, or the token endpoint refused our credentials. */
export class BankUnauthorizedError extends BankError {
  constructor(operation: BankOperation, status: number, detail?: string) {
    super(operation, `bank refused our credentials with HTTP ${status}${detail ? `: ${detail}` : ''}`, status);
  }
}

/** 429: the bank asks us to slow down, optionally saying for how long. */
export class BankRateLimitedError extends BankError {
  constructor(
    operation: BankOperation,
    /** Delay from Retry-After in milliseconds; undefined when the header is missing or unreadable. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(
      operation,
      `bank rate-limited the request (HTTP 429${retryAfterMs === undefined ? '' : `, retry after ${retryAfterMs} ms`})`,
      429,
    );
  }
}

/** 5xx, a network error or a timeout: the request may succeed later. */
export class BankUnavailableError extends BankError {
  constructor(
    operation: BankOperation,
    message: string,
    options: { status?: number; code?: string; cause?: unknown } = {},
  ) {
    super(operation, message, options.status, { cause: options.cause });
    this.code = options.code;
  }

  /** undici / Node error code (`UND_ERR_HEADERS_TIMEOUT`, `ECONNREFUSED`…) or `TIMEOUT` for our own deadline. */
  readonly code: string | undefined;
}

/** A 2xx whose body is not the wire format we expect: the same request would get the same answer. */
export class BankInvalidResponseError extends BankError {
  constructor(operation: BankOperation, status: number, detail: string) {
    super(operation, `bank answered HTTP ${status} with an unexpected body: ${detail}`, status);
  }
}

export function truncate(text: string, max = MAX_ERROR_BODY_CHARS): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more chars)`;
}
