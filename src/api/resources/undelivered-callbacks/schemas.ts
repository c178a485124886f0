/**
 * The undelivered-callback routes (routes.ts): queries, bodies, answers and their
 * OpenAPI operations. Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { MERCHANT_ID_PATTERN } from '../../../shared/ids';
import { UNDELIVERED_STATES } from '../../../shared/undelivered-callbacks';
import {
  errors,
  json,
  LOCATION_HEADER,
  merchantKeyRequired,
  operatorKeyRequired,
  Tag,
  type ApiPaths,
} from '../../openapi/describe';
import { ProblemType } from '../../problem-details';

/** Where a merchant's key reaches its own undelivered callbacks (mounted behind `authenticate` and its budget). */
export const UNDELIVERED_CALLBACKS_PATH = '/callbacks';

export const DEFAULT_UNDELIVERED_PAGE_SIZE = 50;
export const MAX_UNDELIVERED_PAGE_SIZE = 500;
/** The longest range one bulk resend takes (the longest retry window, and more). */
export const MAX_RESEND_RANGE_MS = 31 * 24 * 3_600_000;

const instant = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value).toISOString())
  .describe('RFC 3339 date-time with a time zone, e.g. 2026-11-21T15:00:00Z');
const eventType = z
  .string()
  .regex(/^[a-z][a-z0-9.-]{0,63}$/, 'must be an event type such as finance-application.status-changed')
  .describe('One event type (`finance-application.status-changed`, `consent.transactions-changed`, …)');

const filters = {
  since: instant.optional().describe('First sent at or after this instant (inclusive)'),
  until: instant.optional().describe('First sent before this instant (exclusive)'),
  type: eventType.optional(),
  state: z
    .enum(UNDELIVERED_STATES)
    .optional()
    .describe('`retrying`: its own retries go on; `given-up`: its retry window passed (a resend sends it)'),
  pageSize: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_UNDELIVERED_PAGE_SIZE)
    .default(DEFAULT_UNDELIVERED_PAGE_SIZE)
    .describe(
      `Callbacks per page: ${DEFAULT_UNDELIVERED_PAGE_SIZE} unless given, at most ${MAX_UNDELIVERED_PAGE_SIZE}`,
    ),
  pageToken: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,1024}$/, 'must be the nextPageToken of a previous page')
    .optional()
    .describe('The `nextPageToken` of the previous page, with the same filters'),
};

/** GET /callbacks/undelivered query. */
export const UndeliveredQuerySchema = z.strictObject(filters).meta({ id: 'UndeliveredCallbacksQuery' });

/** GET /operator/callbacks/undelivered query: the same, and the merchant (absent: every merchant). */
export const OperatorUndeliveredQuerySchema = z
  .strictObject({
    ...filters,
    merchant: z
      .string()
      .regex(MERCHANT_ID_PATTERN, 'must be a merchant id (1 to 64 letters, digits and . _ -)')
      .optional()
      .describe("One merchant's (the name of its key); absent: every merchant's"),
  })
  .meta({ id: 'OperatorUndeliveredCallbacksQuery' });

const UndeliveredCallbackSchema = z
  .object({
    merchantId: z.string().meta({ description: 'Whose callback it is (the caller, on the merchant route)' }),
    idempotencyKey: z.string().meta({ description: 'Its `webhook-id`: a resend sends the same' }),
    type: z.string().meta({ description: "The event's type" }),
    state: z.enum(UNDELIVERED_STATES),
    firstAttemptAt: z.string().meta({ description: 'When it was first sent (ISO 8601)' }),
    updatedAt: z.string().meta({ description: 'Its first failure, or when it was given up (ISO 8601)' }),
    attempts: z.number().int().optional().meta({ description: 'Attempts made when last reported' }),
    httpStatus: z.number().int().optional().meta({ description: "The merchant's answer to the last attempt" }),
    message: z.string().optional().meta({ description: 'Why the last attempt failed' }),
    merchantReference: z.string().optional().meta({ description: "The application's reference, for its callbacks" }),
  })
  .meta({ id: 'UndeliveredCallback' });

export const UndeliveredPageSchema = z
  .object({
    callbacks: z.array(UndeliveredCallbackSchema).meta({ description: 'Oldest first (by first attempt, then key)' }),
    nextPageToken: z.string().nullable().meta({ description: 'Send as `pageToken` for the next page; null: last' }),
    dropped: z.number().int().meta({
      description:
        'Undelivered callbacks no longer listed: the oldest, beyond 2000 per merchant (docs/merchant-api.md)',
    }),
  })
  .meta({ id: 'UndeliveredCallbacksPage' });

/** POST /callbacks/resend body (and GET /callbacks/resend query): the range of one bulk resend. */
export const ResendRangeSchema = z
  .strictObject({
    since: instant.describe('Given-up callbacks first sent at or after this instant (inclusive)'),
    until: instant.describe('… and before this instant (exclusive); at most 31 days after `since`'),
    type: eventType.optional(),
  })
  .superRefine((range, ctx) => {
    const ms = Date.parse(range.until) - Date.parse(range.since);
    if (ms <= 0) ctx.addIssue({ code: 'custom', path: ['until'], message: 'must be after since' });
    else if (ms > MAX_RESEND_RANGE_MS)
      ctx.addIssue({ code: 'custom', path: ['until'], message: 'must be at most 31 days after since' });
  })
  .meta({ id: 'CallbackResendRange' });

export const BulkResendProgressSchema = z
  .object({
    merchantId: z.string(),
    since: z.string(),
    until: z.string(),
    type: z.string().optional(),
    found: z.number().int().meta({ description: 'Given-up callbacks of the range found so far' }),
    delivered: z.number().int().meta({ description: 'Of those, taken by the merchant (2xx): they leave the list' }),
    failed: z.number().int().meta({ description: 'Refused again: they stay in the list, given up' }),
    skippedRetrying: z
      .number()
      .int()
      .meta({ description: 'Still retrying on their own: not sent (their own retries deliver them)' }),
    done: z.boolean(),
    failures: z
      .array(z.object({ idempotencyKey: z.string(), message: z.string() }))
      .meta({ description: 'The callbacks that failed again (at most 50)' }),
  })
  .meta({ id: 'CallbackBulkResendProgress' });

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const undeliveredCallbackPaths: ApiPaths = {
  '/callbacks/undelivered': {
    get: {
      'x-listener': 'internal',
      operationId: 'listUndeliveredCallbacks',
      tags: [Tag.Callbacks],
      summary: "The caller's callbacks not delivered: still retrying, or given up",
      description:
        'Callbacks of the caller (never another merchant’s) whose first attempt failed and that no attempt has ' +
        'delivered since: `retrying` while their retry window lasts (default 3 days), then `given-up`. Filtered by ' +
        'when they were first sent and by event type, oldest first, paged.',
      security: merchantKeyRequired,
      requestParams: { query: UndeliveredQuerySchema },
      responses: {
        '200': json(UndeliveredPageSchema, 'A page of undelivered callbacks'),
        ...errors([400, 'An invalid or unknown parameter'], 401, 429, 503),
      },
    },
  },
  '/callbacks/resend': {
    post: {
      'x-listener': 'internal',
      operationId: 'resendCallbacks',
      tags: [Tag.Callbacks],
      summary: "Send the caller's given-up callbacks of a time range again",
      description:
        'Starts one bulk resend of the range (or joins the one running for the same range): each given-up callback ' +
        'first sent in [since, until) is sent again with its own body and `webhook-id`, at the merchant’s pace ' +
        '(`callbackResendsPerMinute`, default 60 a minute). A delivered one leaves the list, so asking again sends ' +
        'none twice. One bulk resend per merchant at a time. Recorded in the audit trail.',
      security: merchantKeyRequired,
      requestBody: { required: true, content: { 'application/json': { schema: ResendRangeSchema } } },
      responses: {
        '202': {
          ...json(BulkResendProgressSchema, 'Started (or joined): its progress'),
          headers: { Location: LOCATION_HEADER('Its progress: GET /callbacks/resend with the same range') },
        },
        ...errors(
          [400, 'An invalid or unknown field, or a range the wrong way round or over 31 days'],
          401,
          [409, 'Another bulk resend of this merchant is running', [ProblemType.Conflict]],
          413,
          415,
          429,
          503,
        ),
      },
    },
    get: {
      'x-listener': 'internal',
      operationId: 'getCallbackResend',
      tags: [Tag.Callbacks],
      summary: "The progress of the caller's bulk resend of a range",
      security: merchantKeyRequired,
      requestParams: { query: ResendRangeSchema },
      responses: {
        '200': json(BulkResendProgressSchema, 'Its progress (`done` once every callback of the range was sent)'),
        ...errors([400, 'An invalid or unknown parameter'], 401, [404, 'No bulk resend of this range'], 429, 503),
      },
    },
  },
  '/operator/callbacks/undelivered': {
    get: {
      'x-listener': 'internal',
      operationId: 'listUndeliveredCallbacksOfMerchants',
      tags: [Tag.Operations],
      summary: 'Undelivered callbacks of one merchant or of every merchant (operators)',
      description:
        'The merchants’ lists (GET /callbacks/undelivered) for operators: `merchant` names one, absent every ' +
        'merchant of the deployment, merged oldest first.',
      security: operatorKeyRequired,
      requestParams: { query: OperatorUndeliveredQuerySchema },
      responses: {
        '200': json(UndeliveredPageSchema, 'A page of undelivered callbacks'),
        ...errors(
          [400, 'An invalid or unknown parameter'],
          [401, "No key, or a key that is no operator's (a merchant's included)"],
          503,
        ),
      },
    },
  },
};
