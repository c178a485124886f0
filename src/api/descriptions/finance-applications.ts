/**
 * The finance-application routes (src/api/routes/finance-applications.ts): bodies, queries, answers and their
 * OpenAPI operations. Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { PAGE_TOKEN_PATTERN } from '../../client/finance-applications';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  REFERENCE_PREFIX_PATTERN,
  STATUS_FILTER_PATTERN,
} from '../../shared/application-search';
import { STATUS_WAIT_LIMITS } from '../../shared/finance-application';
import { REFERENCE_PATTERN } from '../../shared/ids';
import { ApplicationSettingsSchema } from '../settings-schemas';
import { errors, json, merchantKeyRequired, Tag, type ApiPaths } from './describe';

const httpUrl = z.url({ protocol: /^https?$/ });

/** POST /applications: our two fields plus the bank's create request (redirectUrl and anything else, passed on). */
const MerchantReference = z
  .string()
  .regex(REFERENCE_PATTERN, 'letters, digits and . _ ~ - (1 to 128)')
  .meta({ description: 'The idempotency key: one reference, one application at the bank', example: 'order-4711' });

export const StartApplicationSchema = z
  .looseObject({
    merchantReference: MerchantReference,
    redirectUrl: httpUrl,
    /** Ours, not the bank's: where each status change is pushed. */
    callbackUrl: httpUrl.optional().meta({
      description: 'Receives a signed POST per status change; its origin must be in CALLBACK_ALLOWED_ORIGINS',
    }),
    /** Ours, not the bank's: this application's poll policy and deadline, over the operator's defaults. */
    settings: ApplicationSettingsSchema.optional(),
  })
  .meta({
    id: 'StartApplicationRequest',
    description: "Our fields, plus the bank's create request (redirectUrl and any other field, passed on)",
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

/** GET /applications/:ref: the application as the workflow follows it. */
export const ApplicationSchema = z
  .object({
    merchantReference: z.string(),
    financeApplicationId: z.string().nullable(),
    status: z.string().nullable().meta({ description: 'Latest recorded status (null before the first)' }),
    done: z.boolean().meta({ description: 'True once the workflow stopped following it (terminal or deadline)' }),
    history: z.array(StatusChangeSchema).meta({ description: 'Every recorded status, oldest first, each once' }),
  })
  .meta({ id: 'Application' });

const statusValue = z.string().regex(STATUS_FILTER_PATTERN, 'letters, digits and _ . : - (1 to 64)');
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
      .regex(REFERENCE_PREFIX_PATTERN, 'letters, digits and . _ ~ - (1 to 128)')
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
      .regex(PAGE_TOKEN_PATTERN, 'a nextPageToken of an earlier answer')
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
    done: z.boolean().describe('The workflow has closed (terminal status, deadline or termination)'),
    createdAt: z.iso.datetime().describe('When the application was first started'),
  })
  .meta({ id: 'ApplicationSummary' });

export const ListApplicationsResponseSchema = z
  .object({
    applications: z.array(ApplicationSummarySchema).describe('Newest first'),
    nextPageToken: z.string().nullable().describe('Pass as pageToken for the next page; null on the last page'),
  })
  .meta({ id: 'ApplicationList' });

/** Timeouts of a long-poll: `30s` or `1500ms`, at most 60 s. */
const TIMEOUT_PATTERN = /^(\d{1,6})(ms|s)$/;
/** GET /applications/:ref query: the long-poll form when `waitForChangeFrom` is given. */
export const GetApplicationQuerySchema = z
  .object({
    waitForChangeFrom: statusValue
      .optional()
      .describe('Answer once the status differs from this one (at once if it already does), or at the timeout'),
    timeout: z
      .string()
      .regex(TIMEOUT_PATTERN, 'a duration like 30s or 1500ms')
      .transform((value) => {
        const [, amount, unit] = TIMEOUT_PATTERN.exec(value)!;
        return Number(amount) * (unit === 's' ? 1000 : 1);
      })
      .pipe(z.number().min(1).max(STATUS_WAIT_LIMITS.maxTimeoutMs, 'at most 60s'))
      .optional()
      .describe('How long to wait: 30s unless given, at most 60s'),
  })
  .refine((q) => q.timeout === undefined || q.waitForChangeFrom !== undefined, {
    message: 'timeout needs waitForChangeFrom',
    path: ['timeout'],
  });

/**
 * The long-poll's answer header: `changed` (the status differs from waitForChangeFrom), `timeout` (no change: the
 * status in the body is still waitForChangeFrom) or `done` (no change, and none will come: the application is no
 * longer followed).
 */
export const WAIT_OUTCOME_HEADER = 'Wait-Outcome';
export const WaitOutcomeSchema = z.enum(['changed', 'timeout', 'done']);

const RefParams = z.object({ ref: z.string().meta({ description: 'The merchant reference' }) });

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
          [400, 'A parameter is unknown or invalid, or the page token belongs to other filters (`details`)'],
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
        "bank's create response as soon as the application exists. The same reference again answers 200 with the " +
        'same application. Body up to 256 KiB.',
      security: merchantKeyRequired,
      requestBody: { required: true, content: { 'application/json': { schema: StartApplicationSchema } } },
      responses: {
        '201': json(ApplicationStartedSchema, 'Created by this call'),
        '200': json(ApplicationStartedSchema, 'The reference already existed: its application'),
        ...errors(
          [400, 'Invalid body, or callbackUrl outside CALLBACK_ALLOWED_ORIGINS (`details` names it)'],
          401,
          413,
          415,
          [422, 'The bank refused the application'],
          429,
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
          [400, 'Malformed URL (invalid percent-encoding), or invalid waitForChangeFrom / timeout'],
          401,
          [404, 'No application for this reference'],
          [
            429,
            "Over the merchant's request budget (problem type …/rate-limited), the merchant already holds its most " +
              'long-polls at once (…/too-many-long-polls), or the application its most waits (…/too-many-waits): ' +
              'retry after Retry-After',
          ],
          503,
        ),
      },
    },
  },
};
