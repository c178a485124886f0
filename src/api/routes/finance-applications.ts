import express, { type Router } from 'express';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { z } from 'zod';
import {
  FinanceApplicationFailureType,
  FinanceApplicationWaits,
  getFinanceApplication,
  listFinanceApplications,
  PAGE_TOKEN_PATTERN,
  startFinanceApplication,
  TooManyStatusWaitsError,
  waitForFinanceApplicationChange,
  type FinanceApplicationState,
} from '../../client/finance-applications';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  REFERENCE_PREFIX_PATTERN,
  STATUS_FILTER_PATTERN,
} from '../../shared/application-search';
import { STATUS_WAIT_LIMITS } from '../../shared/finance-application';
import { CALLBACK_ALLOWED_ORIGINS, checkCallbackUrl } from '../../security/callback-url';
import { REFERENCE_PATTERN } from '../../shared/ids';
import { withoutWebhookUrl } from '../../shared/bank-wire';
import {
  applicationSettingsFor,
  DEFAULT_SERVICE_SETTINGS,
  formatDuration,
  SettingsError,
} from '../../shared/application-settings';
import {
  ApplicationSettingsSchema,
  applicationOverrides,
  requestFieldOf,
  type ApplicationSettingsBody,
} from '../settings-schemas';
import type { AppDeps } from '../app';
import { merchantOf, scopeOf } from '../authenticate';
import { LongPollSlots, ProblemType } from '../budgets';
import { withStartDeadline } from '../deadlines';
import { HttpError, ProblemError } from '../problem-details';
import { errors, json, merchantKeyRequired, sendAs, Tag, type ApiPaths } from '../openapi/describe';
import { tracedRouter } from '../../telemetry/express-routes';

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
export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

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

/** The settings whose value is a poll interval: a merchant's floor (minPollInterval) bounds them. */
const POLL_INTERVAL_FIELDS = ['fastPollIntervalMs', 'slowPollIntervalMs', 'noWebhookPollIntervalMs'] as const;

const RefParams = z.object({ ref: z.string().meta({ description: 'The merchant reference' }) });

/**
 * The merchant facade over src/client/finance-applications.ts (DESIGN.md contract):
 * - `POST /applications` → 201 (200 when the reference already existed) `{ merchantReference, workflowId,
 *   financeApplicationId, bank }`; 400 when `callbackUrl` is outside CALLBACK_ALLOWED_ORIGINS (here, or in the
 *   worker's verdict), 422 when the bank refused the application, 502 when it could not be reached.
 * - `GET /applications/:ref` → `{ merchantReference, financeApplicationId, status, done, history }`; 404 unknown.
 *   With `?waitForChangeFrom=<STATUS>&timeout=30s`: the same answer once the status differs (or at the timeout,
 *   the status unchanged), with the Wait-Outcome header; 429 with Retry-After when the application takes no more
 *   waits, or the merchant holds its maxLongPolls (src/api/budgets.ts). Waits of this process are shared: one update per application and from-status (FinanceApplicationWaits).
 * - `GET /applications?status=&createdAfter=&createdBefore=&referencePrefix=&pageSize=&pageToken=` →
 *   `{ applications: [{ merchantReference, financeApplicationId, status, done, createdAt }], nextPageToken }`.
 */
export function financeApplicationRoutes(deps: AppDeps): Router {
  const router = tracedRouter();
  const waits = new FinanceApplicationWaits(deps.client);
  const longPolls = new LongPollSlots(deps);

  // Described in financeApplicationPaths below.
  router.get('/applications', async (req, res) => {
    const { pageSize, pageToken, ...filter } = ListApplicationsQuerySchema.parse(req.query);
    let page;
    try {
      page = await listFinanceApplications(deps.client, scopeOf(res, deps.merchants), filter, { pageSize, pageToken });
    } catch (err) {
      if (err instanceof RangeError) throw new HttpError(400, err.message, { field: 'pageToken' });
      throw err;
    }
    sendAs(res, 200, ListApplicationsResponseSchema, page);
  });

  router.post('/applications', express.json({ limit: '256kb' }), async (req, res) => {
    if (!req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const { merchantReference, callbackUrl, settings: asked, ...application } = StartApplicationSchema.parse(req.body);
    const scope = scopeOf(res, deps.merchants);
    const merchant = deps.merchants.resolve(scope.merchantId);
    const settings = settingsOf(deps, asked, merchant.limits.minPollIntervalMs);
    if (callbackUrl !== undefined) {
      const verdict = checkCallbackUrl(callbackUrl, merchant.callbacks.allowList);
      if (!verdict.allowed) throw callbackRefused(verdict.reason, verdict.origin);
    }
    let started;
    try {
      started = await withStartDeadline(deps, 'Creating the finance application', () =>
        startFinanceApplication(
          deps.client,
          scope,
          { merchantReference, callbackUrl, application, settings },
          { taskQueue: deps.taskQueue },
        ),
      );
    } catch (err) {
      throw creationError(err);
    }
    deps.logger.info(
      {
        merchant: merchantOf(res),
        merchantReference,
        financeApplicationId: started.financeApplicationId,
        workflowId: started.workflowId,
        created: started.created,
      },
      started.created ? 'finance application started' : 'finance application already existed',
    );
    const { created: _created, ...body } = started;
    // The client strips it too; here as well, since this answer is what a merchant (or a third party) sees.
    sendAs(res, started.created ? 201 : 200, ApplicationStartedSchema, { ...body, bank: withoutWebhookUrl(body.bank) });
  });

  router.get('/applications/:ref', async (req, res) => {
    const { ref } = req.params;
    if (!REFERENCE_PATTERN.test(ref)) throw new HttpError(404, `No finance application for reference ${ref}`);
    const { waitForChangeFrom, timeout } = GetApplicationQuerySchema.parse(req.query);
    const scope = scopeOf(res, deps.merchants);
    try {
      if (waitForChangeFrom === undefined) {
        sendAs(res, 200, ApplicationSchema, applicationBody(await getFinanceApplication(deps.client, scope, ref)));
        return;
      }
      // The merchant's long-poll budget: a slot held until the answer, or until the merchant hangs up.
      const release = longPolls.tryAcquire(scope.merchantId);
      if (!release) throw longPolls.refusal(scope.merchantId);
      // A merchant that hangs up stops waiting: its share of the wait is released at once.
      const gone = new AbortController();
      const hangUp = () => {
        release();
        gone.abort();
      };
      res.on('close', hangUp);
      if (res.closed) hangUp(); // gone while the budget was checked
      let waited;
      try {
        waited = await waitForFinanceApplicationChange(deps.client, scope, ref, {
          fromStatus: waitForChangeFrom,
          timeoutMs: timeout ?? DEFAULT_WAIT_TIMEOUT_MS,
          waits,
          signal: gone.signal,
          // The process shuts down: answered with the state as it stands, as at the timeout (src/api/drain.ts).
          endEarly: deps.drain?.closing,
        });
      } finally {
        release();
      }
      const { outcome, state } = waited;
      res.setHeader(WAIT_OUTCOME_HEADER, outcome);
      sendAs(res, 200, ApplicationSchema, applicationBody(state));
    } catch (err) {
      if (res.destroyed || res.writableEnded) return; // the merchant hung up: nobody to answer
      if (err instanceof WorkflowNotFoundError) throw new HttpError(404, `No finance application for reference ${ref}`);
      if (err instanceof TooManyStatusWaitsError)
        throw new ProblemError(429, ProblemType.TooManyWaits, 'Too many waits on this application', err.message, {
          retryAfterSeconds: 1,
        });
      throw err;
    }
  });

  return router;
}

function applicationBody(s: FinanceApplicationState): z.input<typeof ApplicationSchema> {
  return {
    merchantReference: s.merchantReference,
    financeApplicationId: s.financeApplicationId ?? null,
    status: s.status ?? null,
    done: s.done,
    history: s.history,
  };
}

/**
 * The operator's defaults with this request's overrides; an inconsistent combination, or a poll interval below the
 * merchant's floor (MERCHANTS_FILE minPollInterval), is a 400 naming the field.
 */
function settingsOf(deps: AppDeps, asked: ApplicationSettingsBody | undefined, minPollIntervalMs: number) {
  const overrides = applicationOverrides(asked);
  const belowFloor = POLL_INTERVAL_FIELDS.filter((field) => (overrides[field] ?? Infinity) < minPollIntervalMs);
  if (belowFloor.length > 0) {
    const problems = belowFloor.map((field) => ({
      path: `settings.${requestFieldOf(field)}`,
      message: `must be at least ${formatDuration(minPollIntervalMs)} for this merchant`,
    }));
    throw new HttpError(400, problems.map((p) => `${p.path} ${p.message}`).join('; '), problems);
  }
  try {
    return applicationSettingsFor((deps.settings ?? DEFAULT_SERVICE_SETTINGS).applications, overrides);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    throw new HttpError(
      400,
      err.problems.map((p) => `settings.${requestFieldOf(p.field)} ${p.message}`).join('; '),
      err.problems.map((p) => ({ path: `settings.${requestFieldOf(p.field)}`, message: p.message })),
    );
  }
}

/** The bank's refusal is the merchant's to fix (422); an unreachable bank is ours (502). Others pass through. */
function creationError(err: unknown): unknown {
  if (!(err instanceof WorkflowUpdateFailedError) || !(err.cause instanceof ApplicationFailure)) return err;
  const { type, message } = err.cause;
  if (type === FinanceApplicationFailureType.CallbackUrlNotAllowed) {
    // The worker's verdict (its allow-list may differ from this process's): the same answer as a refusal here.
    const [details] = (err.cause.details ?? []) as { callbackOrigin?: string | null; reason?: string }[];
    return callbackRefused(details?.reason ?? message, details?.callbackOrigin ?? undefined);
  }
  if (type === FinanceApplicationFailureType.CreateRejected) return new HttpError(422, message);
  if (type === FinanceApplicationFailureType.CreateFailed) return new HttpError(502, message);
  return err;
}

/** 400 naming the refused origin and the variable that would allow it. */
function callbackRefused(reason: string, origin: string | undefined): HttpError {
  return new HttpError(400, `callbackUrl refused: ${reason}`, {
    field: 'callbackUrl',
    origin: origin ?? null,
    variable: CALLBACK_ALLOWED_ORIGINS,
  });
}

/** OpenAPI description of this module's routes (src/api/openapi/document.ts). */
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
