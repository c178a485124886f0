/**
 * The error answers' mechanism, and only that (RFC 9457 problem details, docs/problems.md): the problem types, the
 * body, the error classes a route throws (ValidationError from parseInput for field failures), and the one error
 * middleware that turns any error into a status and a problem body. Each route's own errors (which failure is a 404,
 * a 422…) live beside the route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler } from 'express';
import { z } from 'zod';
import { isGrpcServiceError } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
import type { Logger } from '../telemetry/logging';
import { pathOf } from './request-log';
import { sendJson } from './send-json';

/** RFC 9457's media type: every error answer of both listeners (docs/problems.md). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Where the problem types live: each type is this base and a slug, documented in docs/problems.md. */
export const PROBLEM_TYPE_BASE = 'https://paylater.example/problems/';

/**
 * The stable problem types (`type` of every error answer), one per kind of failure; a slug never changes meaning.
 * docs/problems.md describes each (test/api/problem-details.test.ts keeps the page and this list equal).
 */
export const ProblemType = {
  /** 400: a parameter or field is missing, unknown or out of its bounds (`errors` lists each). */
  Validation: `${PROBLEM_TYPE_BASE}validation`,
  /** 400: the request cannot be read at all (not JSON, bad percent-encoding, a cut body). */
  MalformedRequest: `${PROBLEM_TYPE_BASE}malformed-request`,
  /** 400: callbackUrl's origin is not in the merchant's allow-list (MERCHANTS_FILE, else CALLBACK_ALLOWED_ORIGINS). */
  CallbackUrlRefused: `${PROBLEM_TYPE_BASE}callback-url-refused`,
  /** 401: no API key, or not one of the configured keys (also a bank webhook failing its check). */
  Unauthorized: `${PROBLEM_TYPE_BASE}unauthorized`,
  /** 403: a valid key of the wrong kind, or an origin that may not call. */
  Forbidden: `${PROBLEM_TYPE_BASE}forbidden`,
  /** 404: nothing at this path for this caller (another merchant's answers the same). */
  NotFound: `${PROBLEM_TYPE_BASE}not-found`,
  /** 405: the path exists, the method does not (`Allow` lists the ones it has). */
  MethodNotAllowed: `${PROBLEM_TYPE_BASE}method-not-allowed`,
  /** 409: the request conflicts with what exists (a reference reused with another body; a previous owner's refresh). */
  Conflict: `${PROBLEM_TYPE_BASE}conflict`,
  /** 413: the body (or the number of parameters) is over the route's limit. */
  PayloadTooLarge: `${PROBLEM_TYPE_BASE}payload-too-large`,
  /** 415: not UTF-8 JSON, or an unsupported Content-Encoding. */
  UnsupportedMediaType: `${PROBLEM_TYPE_BASE}unsupported-media-type`,
  /** 422: the bank refused the application. */
  BankRefused: `${PROBLEM_TYPE_BASE}bank-refused`,
  /** 429: over one of the merchant's budgets per minute (requests, creations, refreshes). */
  RateLimited: `${PROBLEM_TYPE_BASE}rate-limited`,
  /** 429: the merchant holds its most long-polls at once. */
  TooManyLongPolls: `${PROBLEM_TYPE_BASE}too-many-long-polls`,
  /** 429: the application holds its most waits at once. */
  TooManyWaits: `${PROBLEM_TYPE_BASE}too-many-waits`,
  /** 429: the merchant holds its most console live pages at once (the console answers it as a page). */
  TooManyLivePages: `${PROBLEM_TYPE_BASE}too-many-live-pages`,
  /** 429: the merchant holds its most claimed consents or open applications (counted in Temporal). */
  QuotaExceeded: `${PROBLEM_TYPE_BASE}quota-exceeded`,
  /** 429: too many wrong keys from this client address; the key was not checked. */
  TooManyWrongKeys: `${PROBLEM_TYPE_BASE}too-many-wrong-keys`,
  /** 500: our bug; the log has the stack. */
  Internal: `${PROBLEM_TYPE_BASE}internal`,
  /** 502: the bank could not be reached, or did not start what was asked. */
  BankUnavailable: `${PROBLEM_TYPE_BASE}bank-unavailable`,
  /** 503: Temporal unavailable, a start past its deadline, or the process shutting down: retry after Retry-After. */
  Unavailable: `${PROBLEM_TYPE_BASE}unavailable`,
} as const;
export type ProblemTypeUri = (typeof ProblemType)[keyof typeof ProblemType];

/** Each type's `title`: the same for every answer of the type. */
export const PROBLEM_TITLES: Record<ProblemTypeUri, string> = {
  [ProblemType.Validation]: 'Invalid request parameters',
  [ProblemType.MalformedRequest]: 'Malformed request',
  [ProblemType.CallbackUrlRefused]: 'Callback URL not allowed',
  [ProblemType.Unauthorized]: 'Unauthorized',
  [ProblemType.Forbidden]: 'Forbidden',
  [ProblemType.NotFound]: 'Not found',
  [ProblemType.MethodNotAllowed]: 'Method not allowed',
  [ProblemType.Conflict]: 'Conflict',
  [ProblemType.PayloadTooLarge]: 'Request too large',
  [ProblemType.UnsupportedMediaType]: 'Unsupported media type',
  [ProblemType.BankRefused]: 'Refused by the bank',
  [ProblemType.RateLimited]: 'Request budget exhausted',
  [ProblemType.TooManyLongPolls]: 'Too many long-polls',
  [ProblemType.TooManyWaits]: 'Too many waits on this application',
  [ProblemType.TooManyLivePages]: 'Too many live pages',
  [ProblemType.QuotaExceeded]: 'Quota exceeded',
  [ProblemType.TooManyWrongKeys]: 'Too many wrong keys',
  [ProblemType.Internal]: 'Internal error',
  [ProblemType.BankUnavailable]: 'Bank unavailable',
  [ProblemType.Unavailable]: 'Service unavailable',
};

/** The type of an error that names none, by status (400 without field errors: the request could not be read). */
const TYPE_OF_STATUS: Record<number, ProblemTypeUri> = {
  400: ProblemType.MalformedRequest,
  401: ProblemType.Unauthorized,
  403: ProblemType.Forbidden,
  404: ProblemType.NotFound,
  405: ProblemType.MethodNotAllowed,
  409: ProblemType.Conflict,
  413: ProblemType.PayloadTooLarge,
  415: ProblemType.UnsupportedMediaType,
  422: ProblemType.BankRefused,
  429: ProblemType.RateLimited,
  502: ProblemType.BankUnavailable,
  503: ProblemType.Unavailable,
};

/** The problem type an answer of `status` has when its error names none. */
export function defaultProblemType(status: number): ProblemTypeUri {
  return TYPE_OF_STATUS[status] ?? ProblemType.Internal;
}

/** Where a field travels. */
export const FieldLocationSchema = z.enum(['body', 'query', 'path', 'header']);
export type FieldLocation = z.infer<typeof FieldLocationSchema>;

/** One field's failure in a problem's `errors`. */
export const FieldErrorSchema = z
  .object({
    in: FieldLocationSchema.optional(),
    field: z.string().meta({ description: 'The field, dotted (`settings.deadline`); "" for the whole body' }),
    pointer: z.string().optional().meta({ description: 'JSON Pointer into the body (RFC 6901), for body fields' }),
    detail: z.string().meta({ description: 'What is wrong and what is allowed' }),
  })
  .meta({ id: 'FieldError' });
export type FieldError = z.infer<typeof FieldErrorSchema>;

/** One field's problem in the legacy `details` (kept for clients written before `errors`). */
export const FieldIssueSchema = z.object({ path: z.string(), message: z.string() });

/**
 * Every error answer's body (RFC 9457 problem details, `application/problem+json`), on both listeners: `type`,
 * `title`, `status`, `detail`, and `errors` for field failures; `error`, `message` and `details` are the body's
 * earlier fields, kept so clients that read them keep working.
 */
export const ProblemBodySchema = z
  .object({
    type: z.url().meta({
      description: 'Stable URI naming the kind of failure (docs/problems.md)',
      example: `${PROBLEM_TYPE_BASE}validation`,
    }),
    title: z.string().meta({ description: 'The problem type in a few words (the same for every answer of its type)' }),
    status: z.number().int().min(400).max(599).meta({ description: 'The HTTP status of this answer' }),
    detail: z.string().meta({ description: 'This occurrence, for people: which field, and what is allowed' }),
    errors: z.array(FieldErrorSchema).optional().meta({ description: 'Each field that failed (validation only)' }),
    error: z.string().meta({ description: "The status's name (earlier field)", example: 'bad_request' }),
    message: z.string().meta({ description: 'The same text as detail (earlier field)' }),
    details: z
      .union([z.array(FieldIssueSchema), z.record(z.string(), z.unknown())])
      .optional()
      .meta({ description: 'Earlier form of errors, or what was refused' }),
  })
  .meta({ id: 'Problem' });
export type ProblemBody = z.infer<typeof ProblemBodySchema>;

/** An error with the HTTP status and message the client should see. */
export class HttpError extends Error {
  /** The problem type; absent: the status's (defaultProblemType). */
  problemType?: string;
  /** The field failures of a validation error. */
  fieldErrors?: FieldError[];

  constructor(
    readonly status: number,
    message: string,
    readonly details?: ProblemBody['details'],
    /** Seconds for a Retry-After header. */
    readonly retryAfterSeconds?: number,
    /** Other headers of the answer (WWW-Authenticate…). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** An HttpError answered with a given problem type (one of ProblemType) and title. */
export class ProblemError extends HttpError {
  constructor(
    status: number,
    readonly type: string,
    readonly title: string,
    detail: string,
    options: { retryAfterSeconds?: number; headers?: Record<string, string>; details?: ProblemBody['details'] } = {},
  ) {
    super(status, detail, options.details, options.retryAfterSeconds, options.headers);
    this.name = 'ProblemError';
    this.problemType = type;
  }
}

/** `in` of a field error as a phrase: "query parameter timeout", "body field settings.deadline". */
function fieldName(e: FieldError): string {
  const where = { body: 'body field', query: 'query parameter', path: 'path parameter', header: 'header' };
  const name = e.field === '' ? 'body' : e.field;
  return e.in === undefined || (e.in === 'body' && e.field === '') ? name : `${where[e.in]} ${name}`;
}

/** 400, problem type validation: one or more fields failed; `detail` names each with what is allowed. */
export class ValidationError extends ProblemError {
  constructor(errors: FieldError[]) {
    const detail = errors.map((e) => `${fieldName(e)}: ${e.detail}`).join('; ');
    super(400, ProblemType.Validation, PROBLEM_TITLES[ProblemType.Validation], detail, {
      details: errors.map((e) => ({ path: e.field, message: e.detail })),
    });
    this.name = 'ValidationError';
    this.fieldErrors = errors;
  }
}

/** A zod path as a dotted field and, for body fields, a JSON Pointer. */
function fieldOf(
  path: readonly PropertyKey[],
  location: FieldLocation | undefined,
): Pick<FieldError, 'field' | 'pointer'> {
  const field = path.map(String).join('.');
  if (location !== 'body') return { field };
  const pointer = `#/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
  return { field, pointer: path.length === 0 ? '#' : pointer };
}

/** The object keys a schema allows at `path` (unwrapping optional, default, pipe), or undefined when unknown. */
function allowedKeys(schema: z.ZodType | undefined, path: readonly PropertyKey[]): string[] | undefined {
  let current: unknown = schema;
  const unwrap = (s: unknown): unknown => {
    for (let i = 0; i < 8 && s; i++) {
      const def = (s as { _zod?: { def?: { type?: string; innerType?: unknown; in?: unknown } } })._zod?.def;
      if (def?.type === 'optional' || def?.type === 'default' || def?.type === 'nullable') s = def.innerType;
      else if (def?.type === 'pipe') s = def.in;
      else return s;
    }
    return s;
  };
  for (const key of path) {
    const shape = (unwrap(current) as { shape?: Record<string, unknown> } | undefined)?.shape;
    current = shape?.[String(key)];
  }
  const shape = (unwrap(current) as { shape?: Record<string, unknown> } | undefined)?.shape;
  return shape ? Object.keys(shape) : undefined;
}

/** A zod issue in words: what is wrong and what is allowed (zod's own words for the rest). */
function issueDetail(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    // parseInput asks zod for the input (reportInput; never shown): absent is "required". Without it, zod's message.
    if (('input' in issue && issue.input === undefined) || / received undefined$/.test(issue.message))
      return 'is required';
    const expected =
      issue.expected === 'object' ? 'a JSON object' : issue.expected === 'array' ? 'a list' : `a ${issue.expected}`;
    return `must be ${expected}`;
  }
  return issue.message;
}

/** The field errors of a ZodError (unknown keys: one error each, naming the allowed ones). */
export function fieldErrorsOf(err: z.ZodError, location?: FieldLocation, schema?: z.ZodType): FieldError[] {
  const errors: FieldError[] = [];
  for (const issue of err.issues) {
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeys(schema, issue.path);
      for (const key of issue.keys) {
        const what = location === 'query' ? 'parameter' : 'field';
        errors.push({
          ...(location && { in: location }),
          ...fieldOf([...issue.path, key], location),
          detail:
            `unknown ${what}` +
            (allowed === undefined
              ? ''
              : allowed.length === 0
                ? ': none is allowed'
                : `; allowed: ${allowed.join(', ')}`),
        });
      }
      continue;
    }
    errors.push({ ...(location && { in: location }), ...fieldOf(issue.path, location), detail: issueDetail(issue) });
  }
  // One line per field and problem (a duration out of bounds fails more than one of its checks, with one message).
  const seen = new Set<string>();
  return errors.filter((e) => {
    const key = `${e.in ?? ''} ${e.field} ${e.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Parses a request's query, body or path parameters with the route's schema: its value, or a ValidationError (400)
 * naming each failing field, where it travels and what is allowed.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, location: FieldLocation): z.output<S> {
  const parsed = schema.safeParse(value, { reportInput: true });
  if (parsed.success) return parsed.data;
  throw new ValidationError(fieldErrorsOf(parsed.error, location, schema));
}

// gRPC status codes: CANCELLED 1, UNKNOWN 2, DEADLINE_EXCEEDED 4, RESOURCE_EXHAUSTED 8, INTERNAL 13, UNAVAILABLE 14.
// UNKNOWN and INTERNAL are the server's own failures ("something went wrong, please retry"), seen while a history
// process's shards moved (the scale-out bench): the request was fine, so it is retried, not answered 500.
const UNAVAILABLE_CODES = new Set<number>([1, 2, 4, 8, 13, 14]);
/** FAILED_PRECONDITION of a run whose workflow task keeps failing or timing out (an overloaded worker): passes. */
const WORKFLOW_TASK_FAILING = /workflow task in failed state/i;

/** True when Temporal could not take the call (down, overloaded, timed out): answer 503 so callers retry. */
export function isTemporalUnavailable(err: unknown): boolean {
  if (err instanceof HttpError) return err.status === 503; // a hard bound (hardBound) ran out
  // The client wraps gRPC errors (ServiceError, WorkflowUpdateFailedError…) with the gRPC error as `cause`.
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && UNAVAILABLE_CODES.has(e.code)) return true;
    // The client's own wrapper of that answer (seen on an overloaded dev server, under an Update-with-Start).
    if (e instanceof NamespaceNotFoundError) return true;
    if (isGrpcServiceError(e) && Number(e.code) === 9 && WORKFLOW_TASK_FAILING.test(`${e.details ?? ''} ${e.message}`))
      return true;
    if (e instanceof Error && !isGrpcServiceError(e) && WORKFLOW_TASK_FAILING.test(e.message)) return true;
    // NOT_FOUND "Namespace … is not found": a server that has just restarted answers this for a few seconds before
    // its namespace registry is loaded (a wrong namespace stops start-up instead, see wait-for-temporal.ts).
    if (
      isGrpcServiceError(e) &&
      Number(e.code) === 5 &&
      /namespace .* not found/i.test(`${e.details ?? ''} ${e.message}`)
    )
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

/** The one error middleware: every error becomes a problem (`application/problem+json`) with the right status. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => answerError(logger, err, req, res);
}

/** The error middleware's answer: the status and problem body of the error, its one log line. */
function answerError(
  logger: Logger,
  err: unknown,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
): void {
  let status = 500;
  let message = 'Internal error';
  let details: ProblemBody['details'];
  let type: string | undefined;
  let fieldErrors: FieldError[] | undefined;
  const libraryError = libraryClientError(err);
  if (err instanceof HttpError) {
    status = err.status;
    message = err.message;
    details = err.details;
    type = err.problemType;
    fieldErrors = err.fieldErrors;
    if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
    for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
  } else if (err instanceof z.ZodError) {
    // A schema parsed outside parseInput (no location known): still the fields, as a validation problem.
    const validation = new ValidationError(fieldErrorsOf(err));
    status = 400;
    message = validation.message;
    details = validation.details;
    type = validation.problemType;
    fieldErrors = validation.fieldErrors;
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
  const problemType = type ?? defaultProblemType(status);
  const body = {
    type: problemType,
    title: PROBLEM_TITLES[problemType as ProblemTypeUri] ?? (err instanceof ProblemError ? err.title : 'Error'),
    status,
    detail: message,
    ...(fieldErrors && fieldErrors.length > 0 ? { errors: fieldErrors } : {}),
    error: httpErrorName(status),
    message,
    ...(details ? { details } : {}),
  } satisfies ProblemBody;
  sendJson(res, status, body, PROBLEM_CONTENT_TYPE);
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
