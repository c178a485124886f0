/**
 * The small vocabulary of the route descriptions (each resource's schemas.ts in src/api/resources/: zod-openapi path objects,
 * so every body and answer is the zod schema the route itself parses or answers with). A route imports its
 * description; src/api/openapi/document.ts gathers the descriptions, never the routes, into the OpenAPI 3.1
 * document; test/api/openapi.test.ts fails when a route and its description disagree.
 */
import type { Response } from 'express';
import { z } from 'zod';
import type {
  ZodOpenApiOperationObject,
  ZodOpenApiPathsObject,
  ZodOpenApiResponseObject,
  ZodOpenApiResponsesObject,
} from 'zod-openapi';
import {
  defaultProblemType,
  PROBLEM_CONTENT_TYPE,
  ProblemBodySchema,
  ProblemType,
  type ProblemTypeUri,
} from '../problem-details';

/** Which listener serves an operation (`x-listener`): public `PORT`, internal `INTERNAL_PORT`, or both. */
export type ListenerName = 'public' | 'internal' | 'both';

/** An operation as a route module declares it: zod-openapi's, with the listener that serves it. */
export type ApiOperation = ZodOpenApiOperationObject & { 'x-listener': ListenerName };

/** A route module's operations, keyed by OpenAPI path (`/applications/{ref}`) and lower-case method. */
export type ApiPaths = ZodOpenApiPathsObject & {
  [path: string]: Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', ApiOperation>>;
};

/** Security scheme names (components.securitySchemes in document.ts). */
export const MERCHANT_API_KEY = 'merchantApiKey';
export const OPERATOR_API_KEY = 'operatorApiKey';
export const WEBHOOK_SECURITY_HEADER = 'webhookSecurityHeader';

/** `Authorization: Bearer <merchant API key>` (MERCHANT_API_KEYS): the merchant facade. */
export const merchantKeyRequired = [{ [MERCHANT_API_KEY]: [] }];
/** `Authorization: Bearer <operator API key>` (OPERATOR_API_KEYS): every operator route (/codec). */
export const operatorKeyRequired = [{ [OPERATOR_API_KEY]: [] }];
/** No credentials: probes, the API description, and the finance webhook (its hash is in the URL). */
export const open: [] = [];

/** Tags, one per concern, in the order the reference page shows them. */
export const Tag = {
  Applications: 'Finance applications',
  Consents: 'Consent refresh',
  Secrets: 'Callback signing secret',
  Callbacks: 'Undelivered callbacks',
  Webhooks: 'Bank webhooks (public listener)',
  Operations: 'Operations',
  Codec: 'Payload codec',
} as const;

/** A JSON answer or body with the given zod schema. */
export function json(schema: z.core.$ZodType, description: string): ZodOpenApiResponseObject {
  return { description, content: { 'application/json': { schema } } };
}

/**
 * The query of a merchant route that takes none: any parameter is a 400, as an unknown one is on every route
 * (docs/decisions/0039-problem-details-and-unknown-parameters.md).
 */
export const NoQuery = z.strictObject({});

/** The `Location` header of an answer that created something: the created resource's path. */
export const LOCATION_HEADER = (description: string) => ({
  description,
  schema: { type: 'string' as const, format: 'uri-reference' },
});

/** Why each error status is answered, unless the operation says more precisely. */
const ERROR_REASONS: Record<number, string> = {
  400: 'A parameter or field is missing, unknown or invalid: `errors` names each, with what is allowed',
  401: 'Missing or invalid credentials',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflicts with what exists',
  413: 'Request body too large',
  415: 'Unsupported content type, charset or content encoding: send UTF-8 JSON',
  422: 'Refused by the bank',
  429:
    "Over the merchant's request budget (requests per minute), or too many wrong keys from this address: retry " +
    'after `Retry-After` seconds',
  502: 'The bank could not be reached or refused to start',
  503: 'Temporal is unavailable or did not answer in time: retry after `Retry-After` seconds',
};

/** The problem types a status may carry unless the operation names its own (400: a bad field, or unreadable). */
const TYPES_OF_STATUS: Record<number, readonly ProblemTypeUri[]> = {
  400: [ProblemType.Validation, ProblemType.MalformedRequest],
  429: [ProblemType.RateLimited, ProblemType.TooManyWrongKeys],
};

/**
 * The 429 of an operation that starts something (a creation, a claim, a refresh): a budget per minute, the merchant's
 * total, or too many wrong keys from the address.
 */
export const STARTS_REFUSED: ErrorEntry = [
  429,
  "Over the merchant's request budget or the operation's own per minute (problem type …/rate-limited), its " +
    'claimed consents or open applications in total (…/quota-exceeded), or too many wrong keys from this address ' +
    '(…/too-many-wrong-keys): retry after Retry-After',
  [ProblemType.RateLimited, ProblemType.QuotaExceeded, ProblemType.TooManyWrongKeys],
];

/** An error answer of an operation: a status, its reason, and the problem types it may carry. */
export type ErrorEntry = number | [number, string] | [number, string, readonly ProblemTypeUri[]];

const problemSchemas = new Map<string, z.ZodType>();

/** The problem body with `status` and `type` narrowed to this answer's (one schema per combination, reused). */
function problemSchema(status: number, types: readonly string[]): z.ZodType {
  const key = `${status} ${types.join(' ')}`;
  let schema = problemSchemas.get(key);
  if (!schema) {
    const [first, ...rest] = types;
    schema = z.intersection(
      ProblemBodySchema,
      z.looseObject({
        type: rest.length === 0 ? z.literal(first!) : z.enum([first!, ...rest] as [string, ...string[]]),
        status: z.literal(status),
      }),
    );
    problemSchemas.set(key, schema);
  }
  return schema;
}

/**
 * The merchant budgets' headers (src/api/budgets.ts; draft-ietf-httpapi-ratelimit-headers-08), on every facade
 * answer, one entry per policy the request went through: described on the 429, where a client needs them.
 */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    schema: { type: 'string' },
    description:
      'Each quota the request was checked against, comma-separated: `"<policy>"; q=<quota>; w=<window seconds>; ' +
      'pk=:<partition>:` (`w` absent for things held at once). Policies: merchant-requests, merchant-creations, ' +
      'merchant-refreshes, merchant-long-polls, merchant-consents, merchant-open-applications, failed-authentications',
    example: '"merchant-requests"; q=6000; w=60; pk=:ZTNiMGM0NDI5OGZj:',
  },
  RateLimit: {
    schema: { type: 'string' },
    description:
      'What is left of each: `"<policy>"; r=<remaining>; t=<seconds until more>`; the one at `r=0` refused the ' +
      'request',
    example: '"merchant-requests"; r=0; t=42',
  },
} as const;

/**
 * Error answers, by status, each an RFC 9457 problem (`application/problem+json`, ProblemBodySchema) whose `type`
 * is one of the status's problem types (docs/problems.md): `errors(401, [404, 'No application for this reference'])`;
 * `[409, 'why', [ProblemType.Conflict]]` names the types. A 429 carries Retry-After and the rate-limit headers, a
 * 503 Retry-After, a 401 WWW-Authenticate.
 */
export function errors(...statuses: ErrorEntry[]): ZodOpenApiResponsesObject {
  const responses: ZodOpenApiResponsesObject = {};
  for (const entry of statuses) {
    const [status, reason, types] =
      typeof entry === 'number' ? [entry, ERROR_REASONS[entry] ?? 'Error', undefined] : entry;
    const problemTypes = types ?? TYPES_OF_STATUS[status] ?? [defaultProblemType(status)];
    const response: ZodOpenApiResponseObject = {
      description: `${reason} (problem type${problemTypes.length > 1 ? 's' : ''} ${problemTypes.map((t) => `\`${t.slice(t.lastIndexOf('/') + 1)}\``).join(', ')})`,
      content: { [PROBLEM_CONTENT_TYPE]: { schema: problemSchema(status, problemTypes) } },
    };
    if (status === 503) response.headers = { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds' } };
    if (status === 429)
      response.headers = {
        'Retry-After': { schema: { type: 'integer' }, description: 'seconds' },
        ...RATE_LIMIT_HEADERS,
      };
    if (status === 401) response.headers = { 'WWW-Authenticate': { schema: { type: 'string' } } };
    responses[String(status) as `4${string}`] = response;
  }
  return responses;
}

/**
 * Sends `body` as the answer the operation declares: parsed with its schema, so what goes out is what the document
 * says (unknown fields dropped). A body that does not match is our bug, a 500 (never the caller's 400).
 */
export function sendAs<S extends z.ZodType>(res: Response, status: number, schema: S, body: z.input<S>): void {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(`Answer does not match its schema: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`);
  }
  res.status(status).json(parsed.data);
}
