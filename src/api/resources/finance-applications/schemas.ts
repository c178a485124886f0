/**
 * The finance-application routes (routes.ts): bodies, queries, answers and their
 * OpenAPI operations. Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { PAGE_TOKEN_PATTERN } from '../../../client/finance-applications';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  REFERENCE_PREFIX_PATTERN,
  STATUS_FILTER_PATTERN,
} from '../../../shared/application-search';
import { STATUS_WAIT_LIMITS } from '../../../shared/finance-application';
import { APPLICATION_PHASES } from '../../../shared/application-phase';
import { REFERENCE_PATTERN } from '../../../shared/ids';
import { ApplicationSettingsSchema } from '../../settings-schemas';
import { ProblemType } from '../../problem-details';
import {
  errors,
  json,
  LOCATION_HEADER,
  merchantKeyRequired,
  NoQuery,
  STARTS_REFUSED,
  Tag,
  type ApiPaths,
} from '../../openapi/describe';

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http or https URL' });

const MerchantReference = z
  .string()
  .regex(REFERENCE_PATTERN, 'must be 1 to 128 letters, digits and . _ ~ - (not "." or "..")')
  .meta({ description: 'The idempotency key: one reference, one application at the bank', example: 'order-4711' });

/** Our fields of the body; every other top-level field is the bank's (docs/decisions/0002-create-request-fields.md). */
export const OWN_FIELDS = ['merchantReference', 'redirectUrl', 'callbackUrl', 'settings'] as const;
const BANK_FIELD_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * POST /applications: our fields, and the bank's create request (redirectUrl and every other field, passed on as
 * sent: the contract). A field that spells one of ours in another case (`callbackURL`) is refused rather than sent to
 * the bank, and the bank's field names are bounded (docs/decisions/0039-problem-details-and-unknown-parameters.md).
 */
export const StartApplicationSchema = z
  .object({
    merchantReference: MerchantReference,
    redirectUrl: httpUrl.meta({ description: "Where the bank sends the customer back (the bank's create request)" }),
    /** Ours, not the bank's: where each status change is pushed. */
    callbackUrl: httpUrl.optional().meta({
      description:
        "Receives a signed POST per status change; its origin must be in the merchant's allow-list " +
        '(MERCHANTS_FILE callbackAllowedOrigins, else CALLBACK_ALLOWED_ORIGINS)',
    }),
    /** Ours, not the bank's: this application's poll policy and deadline, over the operator's defaults. */
    settings: ApplicationSettingsSchema.optional(),
  })
  .catchall(
    z.json().meta({
      description:
        "Any other field is the bank's create request's (an amount, a customer reference…), passed on as sent; " +
        'names up to 64 of [A-Za-z0-9_.-]; `webhookUrl` is always ours (replaced)',
    }),
  )
  .superRefine((body, ctx) => {
    for (const key of Object.keys(body)) {
      if ((OWN_FIELDS as readonly string[]).includes(key)) continue;
      const ours = OWN_FIELDS.find((field) => field.toLowerCase() === key.toLowerCase());
      if (ours !== undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: `unknown field; did you mean ${ours}?` });
      else if (!BANK_FIELD_NAME.test(key))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: "a bank field's name must be 1 to 64 letters, digits and _ . -",
        });
    }
  })
  .meta({
    id: 'StartApplicationRequest',
    description: "Our fields, plus the bank's create request (redirectUrl and any other field, passed on)",
    example: {
      merchantReference: 'order-4711',
      redirectUrl: 'https://shop.example/done',
      amount: { value: 120, currency: 'EUR' },
    },
  });

/** 201/200 of POST /applications: the bank's create response, once the application exists. */
export const ApplicationStartedSchema = z
  .object({
    merchantReference: z.string(),
    workflowId: z.string(),
    financeApplicationId: z.string(),
    bank: z.looseObject({ financeApplicationId: z.string(), status: z.string().optional() }).meta({
      description:
        "The bank's create response, as it answered, without any field naming a webhook: the webhook URL the bank " +
        'may echo carries the credential of the status webhook',
    }),
  })
  .meta({ id: 'ApplicationStarted' });

export const StatusChangeSchema = z
  .object({
    status: z.string(),
    at: z.iso.datetime().meta({ description: 'When the workflow learned it' }),
    source: z.enum(['create', 'webhook', 'poll']),
  })
  .meta({ id: 'StatusChange' });

/** Where an application stands: one vocabulary for the API and the console (src/shared/application-phase.ts). */
const PhaseSchema = z.enum(APPLICATION_PHASES).meta({
  id: 'ApplicationPhase',
  description:
    '`following`: its status may still change; `notifying`: the status is final, the last callbacks are still ' +
    'being sent (retried); `closed`: nothing more happens (docs/merchant-api.md#phases)',
});

/** GET /applications/:ref: the application as the workflow follows it. */
export const ApplicationSchema = z
  .object({
    merchantReference: z.string(),
    financeApplicationId: z.string().nullable(),
    status: z.string().nullable().meta({ description: 'Latest recorded status (null before the first)' }),
    phase: PhaseSchema,
    done: z.boolean().meta({ description: 'True once no status change will come: `phase` is past `following`' }),
    history: z.array(StatusChangeSchema).meta({ description: 'Every recorded status, oldest first, each once' }),
  })
  .meta({ id: 'Application' });

const statusValue = z.string().regex(STATUS_FILTER_PATTERN, 'must be 1 to 64 letters, digits and _ . : -');
const instant = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value))
  .describe('RFC 3339 date-time with a time zone, e.g. 2026-11-21T15:00:00Z');

/** GET /applications query: every parameter optional; an unknown one is a 400 (a typo never lists everything). */
export const ListApplicationsQuerySchema = z
  .strictObject({
    status: statusValue.optional().describe('The latest recorded status, exactly'),
    createdAfter: instant.optional().describe('Created at or after this instant (inclusive)'),
    createdBefore: instant.optional().describe('Created before this instant (exclusive)'),
    referencePrefix: z
      .string()
      .regex(REFERENCE_PREFIX_PATTERN, 'must be 1 to 128 letters, digits and . _ ~ -')
      .optional()
      .describe('Merchant references starting with this'),
    pageSize: z.coerce
      .number()
      .int()
      .min(1)
      .max(MAX_PAGE_SIZE)
      .default(DEFAULT_PAGE_SIZE)
      .describe(`Applications per page: ${DEFAULT_PAGE_SIZE} unless given, at most ${MAX_PAGE_SIZE}`),
    pageToken: z
      .string()
      .regex(PAGE_TOKEN_PATTERN, 'must be the nextPageToken of an earlier answer')
      .optional()
      .describe('The nextPageToken of the previous page, with the same filters'),
  })
  .refine((q) => !q.createdAfter || !q.createdBefore || q.createdAfter < q.createdBefore, {
    message: 'createdAfter must be before createdBefore',
    path: ['createdAfter'],
  });

/** One item of GET /applications. */
export const ApplicationSummarySchema = z
  .object({
    merchantReference: z.string(),
    financeApplicationId: z.string().nullable(),
    status: z.string().nullable().describe('The latest recorded status; null until the bank created the application'),
    phase: PhaseSchema,
    done: z.boolean().describe('True once no status change will come: `phase` is past `following`'),
    createdAt: z.iso.datetime().describe('When the application was first started'),
  })
  .meta({ id: 'ApplicationSummary' });

export const ListApplicationsResponseSchema = z
  .object({
    applications: z.array(ApplicationSummarySchema).describe('Newest first'),
    nextPageToken: z.string().nullable().describe('Pass as pageToken for the next page; null on the last page'),
  })
  .meta({ id: 'ApplicationList' });

/**
 * Timeouts of a long-poll: 1ms to 60000ms, or 1s to 60s, no leading zero. The pattern holds the bounds, so the
 * document says exactly what is accepted.
 */
const TIMEOUT_PATTERN = /^(?:(?:[1-9]\d{0,3}|[1-5]\d{4}|60000)ms|(?:[1-9]|[1-5]\d|60)s)$/;
/** GET /applications/:ref query: the long-poll form when `waitForChangeFrom` is given; nothing else. */
export const GetApplicationQuerySchema = z
  .strictObject({
    waitForChangeFrom: statusValue
      .optional()
      .describe('Answer once the status differs from this one (at once if it already does), or at the timeout'),
    timeout: z
      .string()
      .regex(
        TIMEOUT_PATTERN,
        `must be 1s to ${STATUS_WAIT_LIMITS.maxTimeoutMs / 1000}s, or 1ms to ${STATUS_WAIT_LIMITS.maxTimeoutMs}ms (e.g. 30s, 1500ms)`,
      )
      .transform((value) => (value.endsWith('ms') ? Number(value.slice(0, -2)) : Number(value.slice(0, -1)) * 1000))
      .optional()
      .describe('How long to wait: 30s unless given; 1s to 60s or 1ms to 60000ms. Only with waitForChangeFrom'),
  })
  .refine((q) => q.timeout === undefined || q.waitForChangeFrom !== undefined, {
    message: 'needs waitForChangeFrom',
    path: ['timeout'],
  });

/**
 * The long-poll's answer header: `changed` (the status differs from waitForChangeFrom), `timeout` (no change: the
 * status in the body is still waitForChangeFrom) or `done` (no change, and none will come: the application is no
 * longer followed).
 */
export const WAIT_OUTCOME_HEADER = 'Wait-Outcome';
export const WaitOutcomeSchema = z.enum(['changed', 'timeout', 'done']);

/** The path's reference: a value outside the pattern is a 400 (no application can have it). */
export const RefParams = z.strictObject({
  ref: MerchantReference.meta({ description: 'The merchant reference' }),
});

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const financeApplicationPaths: ApiPaths = {
  '/applications': {
    get: {
      'x-listener': 'internal',
      operationId: 'listApplications',
      tags: [Tag.Applications],
      summary: 'List applications by status, creation window and reference prefix (paginated)',
      description:
        "Reads Temporal's visibility store (eventually consistent: a new application or status shows after a " +
        'moment). Only the latest run of each application; newest first. Pass nextPageToken back as pageToken with ' +
        'the same filters.',
      security: merchantKeyRequired,
      requestParams: { query: ListApplicationsQuerySchema },
      responses: {
        '200': json(ListApplicationsResponseSchema, 'One page of applications'),
        ...errors(
          [400, 'A parameter is unknown or invalid, or the page token belongs to other filters (`errors` names it)'],
          401,
          429,
          503,
        ),
      },
    },
    post: {
      'x-listener': 'internal',
      operationId: 'startApplication',
      tags: [Tag.Applications],
      summary: 'Start a finance application (idempotent per merchantReference)',
      description:
        "Starts the reference's workflow, or reaches the existing one (update-with-start), and answers with the " +
        "bank's create response as soon as the application exists. The same reference with the same body answers 200 " +
        'with the same application; with another body (redirectUrl, callbackUrl, a bank field, or a settings value the ' +
        'application does not run with), 409 (docs/decisions/0038-reference-reuse-conflict.md). Body up to 256 KiB; ' +
        'an unknown field is a 400.',
      security: merchantKeyRequired,
      requestParams: { query: NoQuery },
      requestBody: { required: true, content: { 'application/json': { schema: StartApplicationSchema } } },
      responses: {
        '201': {
          ...json(ApplicationStartedSchema, 'Created by this call'),
          headers: { Location: LOCATION_HEADER('The application: /applications/{merchantReference}') },
        },
        '200': json(ApplicationStartedSchema, 'The reference already existed with the same body: its application'),
        ...errors(
          [
            400,
            'A field is missing, unknown or invalid (`errors` names each), the body is not JSON, or callbackUrl is ' +
              "outside the merchant's allow-list (`details` names the origin and the variable: MERCHANTS_FILE or " +
              'CALLBACK_ALLOWED_ORIGINS)',
            [ProblemType.Validation, ProblemType.MalformedRequest, ProblemType.CallbackUrlRefused],
          ],
          401,
          [409, 'The reference is already used by an application created with another body: `errors` names the fields'],
          413,
          415,
          [422, 'The bank refused the application'],
          STARTS_REFUSED,
          [502, 'The bank could not be reached'],
          [503, 'Temporal unavailable, or the bank did not answer within the start deadline: retry the same request'],
        ),
      },
    },
  },
  '/applications/{ref}': {
    get: {
      'x-listener': 'internal',
      operationId: 'getApplication',
      tags: [Tag.Applications],
      summary: "The application's status and history; with waitForChangeFrom, a long-poll for its next change",
      description:
        'With `waitForChangeFrom`, answers as soon as the status differs from it (at once if it already does), or ' +
        'at the timeout with the status unchanged (or earlier when the serving process shuts down: poll again); the ' +
        '`Wait-Outcome` header says which. Served by a workflow update ' +
        '(no repeated reads); an application holds at most 5 waits at once, and a merchant its maxLongPolls (429 ' +
        'beyond).',
      security: merchantKeyRequired,
      requestParams: { path: RefParams, query: GetApplicationQuerySchema },
      responses: {
        '200': {
          ...json(ApplicationSchema, 'The application'),
          headers: {
            [WAIT_OUTCOME_HEADER]: {
              description:
                'Long-poll only: `changed` (the status differs from waitForChangeFrom), `timeout` (no change, at the ' +
                'timeout or because the process shuts down), ' +
                '`done` (no change, and none will come)',
              schema: { type: 'string', enum: [...WaitOutcomeSchema.options] },
            },
          },
        },
        ...errors(
          [
            400,
            'Malformed URL (invalid percent-encoding), a reference outside its pattern, an unknown parameter, or an ' +
              'invalid waitForChangeFrom / timeout',
          ],
          401,
          [404, 'No application for this reference'],
          [
            429,
            "Over the merchant's request budget (problem type …/rate-limited), the merchant already holds its most " +
              'long-polls at once (…/too-many-long-polls), the application its most waits (…/too-many-waits), or ' +
              'too many wrong keys from this address (…/too-many-wrong-keys): retry after Retry-After',
            [
              ProblemType.RateLimited,
              ProblemType.TooManyLongPolls,
              ProblemType.TooManyWaits,
              ProblemType.TooManyWrongKeys,
            ],
          ],
          503,
        ),
      },
    },
  },
};
