import type { ErrorRequestHandler } from 'express';
import { z } from 'zod';
import { isGrpcServiceError } from '@temporalio/client';
import type { Logger } from '../logging';

/** An error with the HTTP status and message the client should see. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: unknown,
    /** Seconds for a Retry-After header. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

// gRPC status codes: CANCELLED 1, DEADLINE_EXCEEDED 4, RESOURCE_EXHAUSTED 8, UNAVAILABLE 14.
const UNAVAILABLE_CODES = new Set<number>([1, 4, 8, 14]);

/** True when Temporal could not take the call (down, overloaded, timed out): answer 503 so callers retry. */
export function isTemporalUnavailable(err: unknown): boolean {
  // The client wraps gRPC errors (ServiceError, WorkflowUpdateFailedError…) with the gRPC error as `cause`.
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && UNAVAILABLE_CODES.has(e.code)) return true;
  }
  return false;
}

export const DEFAULT_START_DEADLINE_MS = 30_000;

/**
 * Runs a merchant's start call under a deadline. The workflow keeps going when it passes (a slow bank, or no
 * worker polling), so the merchant is told to retry the same idempotent request: 503 with Retry-After.
 */
export async function withStartDeadline<T>(
  deps: { client: { withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R> }; startDeadlineMs?: number },
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  const ms = deps.startDeadlineMs ?? DEFAULT_START_DEADLINE_MS;
  try {
    return await deps.client.withDeadline(Date.now() + ms, fn);
  } catch (err) {
    if (hasGrpcCode(err, 4 /* DEADLINE_EXCEEDED */)) {
      throw new HttpError(
        503,
        `${what} did not complete within ${ms} ms; it goes on: retry the same request`,
        undefined,
        5,
      );
    }
    throw err;
  }
}

/** The error's message and, when it wraps one, the gRPC error's ("8 RESOURCE_EXHAUSTED: …"): a line, no stack. */
function causeOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && e !== err) return `${message}: ${e.message}`;
  }
  return message;
}

function hasGrpcCode(err: unknown, code: number): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && Number(e.code) === code) return true;
  }
  return false;
}

/** The one error middleware: every error becomes a JSON body `{ error, message }` with the right status. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    let status = 500;
    let message = 'Internal error';
    let details: unknown;
    const bodyParserType = (err as { type?: string })?.type;
    if (err instanceof HttpError) {
      status = err.status;
      message = err.message;
      details = err.details;
      if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
    } else if (err instanceof z.ZodError) {
      status = 400;
      message = 'Invalid request';
      details = err.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    } else if (bodyParserType === 'entity.too.large') {
      status = 413;
      message = 'Request body too large';
    } else if (bodyParserType === 'entity.parse.failed' || bodyParserType === 'encoding.unsupported') {
      status = 400;
      message = 'Malformed JSON body';
    } else if (isTemporalUnavailable(err)) {
      status = 503;
      message = 'Temporal is unavailable; retry later';
      res.setHeader('Retry-After', '5');
    }
    if (status === 503) {
      // Expected (Temporal down or slow; the caller retries): one line with the cause, no stack.
      logger.warn({ method: req.method, path: loggablePath(req.path), status, cause: causeOf(err) }, message);
    } else if (status >= 500) logger.error({ err, method: req.method, path: loggablePath(req.path) }, message);
    else logger.info({ method: req.method, path: loggablePath(req.path), status, message }, 'request rejected');
    res.status(status).json({ error: httpErrorName(status), message, ...(details ? { details } : {}) });
  };
}

/** A request path for logs: a finance webhook's hash (a credential for that reference) is replaced. */
export function loggablePath(path: string): string {
  return path.replace(/^(\/webhooks\/finance-applications\/[^/]+)\/[^/]+$/, '$1/:hash');
}

function httpErrorName(status: number): string {
  const names: Record<number, string> = {
    400: 'bad_request',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not_found',
    409: 'conflict',
    413: 'payload_too_large',
    415: 'unsupported_media_type',
    422: 'unprocessable_entity',
    502: 'bad_gateway',
    503: 'unavailable',
  };
  return names[status] ?? 'internal_error';
}
