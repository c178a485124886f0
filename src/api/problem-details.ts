/**
 * The error answers' mechanism, and only that (RFC 9457 problem details): the bodies, the error classes a route
 * throws, and the one error middleware that turns any error into a status and a JSON body. Each route's own errors
 * (which failure is a 404, a 422…) live beside the route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler } from 'express';
import { z } from 'zod';
import { isGrpcServiceError } from '@temporalio/client';
import type { Logger } from '../telemetry/logging';
import { pathOf } from './request-log';
import { sendJson } from './send-json';

/** RFC 9457's media type: the answers of a ProblemError (the 429s of the merchant budgets). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** One field's problem in a 400's `details` (zod issues, mapped). */
export const FieldIssueSchema = z.object({ path: z.string(), message: z.string() });

/**
 * Every error answer's body (the error middleware's, and the receivers'): `error` is the status's name, `message`
 * says what to do; `details` lists the fields of a 400 (or names what was refused).
 */
export const ErrorBodySchema = z
  .object({
    error: z.string().meta({ example: 'bad_request' }),
    message: z.string(),
    details: z.union([z.array(FieldIssueSchema), z.record(z.string(), z.unknown())]).optional(),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/**
 * A refusal with a stable problem type (RFC 9457 problem details, `application/problem+json`): the error body's
 * fields, so clients reading `error` and `message` keep working, plus `type`, `title`, `status` and `detail`.
 */
export const ProblemBodySchema = ErrorBodySchema.extend({
  type: z
    .url()
    .meta({ description: 'Stable URI naming the problem', example: 'https://paylater.example/problems/rate-limited' }),
  title: z.string().meta({ description: 'The problem type in a few words (the same for every answer of its type)' }),
  status: z.number().int(),
  detail: z.string().meta({ description: 'This occurrence, for people (the same text as message)' }),
}).meta({ id: 'Problem' });
export type ProblemBody = z.infer<typeof ProblemBodySchema>;

/** An error with the HTTP status and message the client should see. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: ErrorBody['details'],
    /** Seconds for a Retry-After header. */
    readonly retryAfterSeconds?: number,
    /** Other headers of the answer (WWW-Authenticate…). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** An HttpError answered as problem details: `type` is a stable URI, `title` names the type. */
export class ProblemError extends HttpError {
  constructor(
    status: number,
    readonly type: string,
    readonly title: string,
    detail: string,
    options: { retryAfterSeconds?: number; headers?: Record<string, string> } = {},
  ) {
    super(status, detail, undefined, options.retryAfterSeconds, options.headers);
    this.name = 'ProblemError';
  }
}

// gRPC status codes: CANCELLED 1, DEADLINE_EXCEEDED 4, RESOURCE_EXHAUSTED 8, UNAVAILABLE 14.
const UNAVAILABLE_CODES = new Set<number>([1, 4, 8, 14]);

/** True when Temporal could not take the call (down, overloaded, timed out): answer 503 so callers retry. */
export function isTemporalUnavailable(err: unknown): boolean {
  if (err instanceof HttpError) return err.status === 503; // a hard bound (hardBound) ran out
  // The client wraps gRPC errors (ServiceError, WorkflowUpdateFailedError…) with the gRPC error as `cause`.
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && UNAVAILABLE_CODES.has(e.code)) return true;
    // NOT_FOUND "Namespace … is not found": a server that has just restarted answers this for a few seconds before
    // its namespace registry is loaded (a wrong namespace stops start-up instead, see wait-for-temporal.ts).
    if (isGrpcServiceError(e) && Number(e.code) === 5 && /namespace .* not found/i.test(e.details ?? e.message))
      return true;
  }
  return false;
}

/** The error's message and, when it wraps one, the gRPC error's ("8 RESOURCE_EXHAUSTED: …"): a line, no stack. */
function causeOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && e !== err) return `${message}: ${e.message}`;
  }
  return message;
}

/**
 * Client errors raised by Express's own parts, with the answer each gets: body-parser (express.json on the
 * facade) and the router (a path parameter that is not valid percent-encoding). Their messages may quote the
 * raw input, so a fixed message is sent and logged instead.
 */
const LIBRARY_CLIENT_ERRORS: Record<string, [number, string]> = {
  'entity.too.large': [413, 'Request body too large'],
  'entity.parse.failed': [400, 'Malformed JSON body'],
  'entity.verify.failed': [400, 'Malformed JSON body'],
  'request.aborted': [400, 'Request aborted'],
  'request.size.invalid': [400, 'Request body size does not match Content-Length'],
  'parameters.too.many': [413, 'Too many parameters'],
  'charset.unsupported': [415, 'Unsupported charset: send UTF-8 JSON'],
  'encoding.unsupported': [415, 'Unsupported Content-Encoding'],
};

/** An error from a library that carries an HTTP status of the client's making (http-errors' shape). */
function libraryClientError(err: unknown): [number, string] | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { type, status, statusCode } = err as { type?: unknown; status?: unknown; statusCode?: unknown };
  if (typeof type === 'string' && type in LIBRARY_CLIENT_ERRORS) return LIBRARY_CLIENT_ERRORS[type];
  const code = typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : undefined;
  if (code === undefined || code < 400 || code > 499) return undefined;
  // The router's decode failure: `Failed to decode param '…'` (URIError, status 400).
  if (code === 400) return [400, 'Malformed URL: invalid percent-encoding in a path parameter'];
  return [code, httpErrorName(code).replace(/_/g, ' ')];
}

/** The one error middleware: every error becomes a JSON body `{ error, message }` with the right status. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => answerError(logger, err, req, res);
}

/** The error middleware's answer: the status and body of the error, its one log line. */
function answerError(
  logger: Logger,
  err: unknown,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
): void {
  let status = 500;
  let message = 'Internal error';
  let details: ErrorBody['details'];
  const libraryError = libraryClientError(err);
  if (err instanceof HttpError) {
    status = err.status;
    message = err.message;
    details = err.details;
    if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
    for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
  } else if (err instanceof z.ZodError) {
    status = 400;
    message = 'Invalid request';
    details = err.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  } else if (libraryError) {
    [status, message] = libraryError;
  } else if (isTemporalUnavailable(err)) {
    status = 503;
    message = 'Temporal is unavailable; retry later';
    res.setHeader('Retry-After', '5');
  }
  // The path, not the URL: the query (where `?hash=` travels) is never logged.
  const path = pathOf(req.originalUrl ?? req.url);
  if (status === 503) {
    // Expected (Temporal down or slow; the caller retries): one line with the cause, no stack.
    logger.warn({ method: req.method, path, status, cause: causeOf(err) }, message);
  } else if (status >= 500) logger.error({ err, method: req.method, path }, message);
  else logger.info({ method: req.method, path, status, message }, 'request rejected');
  if (res.headersSent) {
    // An answer already on its way cannot be replaced: end it (the client sees a cut answer, not a hang).
    res.destroy();
    return;
  }
  const body = {
    error: httpErrorName(status),
    message,
    ...(details ? { details } : {}),
  } satisfies ErrorBody;
  if (err instanceof ProblemError) {
    const problem = { type: err.type, title: err.title, status, detail: message, ...body } satisfies ProblemBody;
    sendJson(res, status, problem, PROBLEM_CONTENT_TYPE);
    return;
  }
  sendJson(res, status, body);
}

function httpErrorName(status: number): string {
  const names: Record<number, string> = {
    400: 'bad_request',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not_found',
    405: 'method_not_allowed',
    409: 'conflict',
    413: 'payload_too_large',
    415: 'unsupported_media_type',
    431: 'request_header_fields_too_large',
    422: 'unprocessable_entity',
    429: 'too_many_requests',
    502: 'bad_gateway',
    503: 'unavailable',
  };
  return names[status] ?? 'internal_error';
}
