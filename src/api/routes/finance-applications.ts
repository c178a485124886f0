import express, { type Router } from 'express';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { z } from 'zod';
import {
  FinanceApplicationFailureType,
  getFinanceApplication,
  startFinanceApplication,
} from '../../client/finance-applications';
import { CALLBACK_ALLOWED_ORIGINS, checkCallbackUrl, NO_CALLBACKS } from '../../security/callback-url';
import { REFERENCE_PATTERN } from '../../shared/ids';
import { applicationSettingsFor, DEFAULT_SERVICE_SETTINGS, SettingsError } from '../../shared/application-settings';
import { ApplicationSettingsSchema, applicationOverrides, requestFieldOf } from '../settings-schemas';
import type { AppDeps } from '../app';
import { merchantOf } from '../authenticate';
import { HttpError, withStartDeadline } from '../errors';
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
    bank: z
      .looseObject({ financeApplicationId: z.string(), status: z.string().optional() })
      .meta({ description: "The bank's create response, as it answered" }),
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

const RefParams = z.object({ ref: z.string().meta({ description: 'The merchant reference' }) });

/**
 * The merchant facade over src/client/finance-applications.ts (DESIGN.md contract):
 * - `POST /applications` → 201 (200 when the reference already existed) `{ merchantReference, workflowId,
 *   financeApplicationId, bank }`; 400 when `callbackUrl` is outside CALLBACK_ALLOWED_ORIGINS (here, or in the
 *   worker's verdict), 422 when the bank refused the application, 502 when it could not be reached.
 * - `GET /applications/:ref` → `{ merchantReference, financeApplicationId, status, done, history }`; 404 unknown.
 */
export function financeApplicationRoutes(deps: AppDeps): Router {
  const router = tracedRouter();

  // Described in financeApplicationPaths below.
  router.post('/applications', express.json({ limit: '256kb' }), async (req, res) => {
    if (!req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const { merchantReference, callbackUrl, settings: asked, ...application } = StartApplicationSchema.parse(req.body);
    const settings = settingsOf(deps, asked);
    if (callbackUrl !== undefined) {
      const verdict = checkCallbackUrl(callbackUrl, deps.callbackAllowList ?? NO_CALLBACKS);
      if (!verdict.allowed) throw callbackRefused(verdict.reason, verdict.origin);
    }
    let started;
    try {
      started = await withStartDeadline(deps, 'Creating the finance application', () =>
        startFinanceApplication(
          deps.client,
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
    sendAs(res, started.created ? 201 : 200, ApplicationStartedSchema, body);
  });

  router.get('/applications/:ref', async (req, res) => {
    const { ref } = req.params;
    if (!REFERENCE_PATTERN.test(ref)) throw new HttpError(404, `No finance application for reference ${ref}`);
    try {
      const s = await getFinanceApplication(deps.client, ref);
      sendAs(res, 200, ApplicationSchema, {
        merchantReference: s.merchantReference,
        financeApplicationId: s.financeApplicationId ?? null,
        status: s.status ?? null,
        done: s.done,
        history: s.history,
      });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new HttpError(404, `No finance application for reference ${ref}`);
      throw err;
    }
  });

  return router;
}

/** The operator's defaults with this request's overrides; an inconsistent combination is a 400 naming the field. */
function settingsOf(deps: AppDeps, asked: Parameters<typeof applicationOverrides>[0]) {
  try {
    return applicationSettingsFor(
      (deps.settings ?? DEFAULT_SERVICE_SETTINGS).applications,
      applicationOverrides(asked),
    );
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
      summary: "The application's status and history",
      security: merchantKeyRequired,
      requestParams: { path: RefParams },
      responses: {
        '200': json(ApplicationSchema, 'The application'),
        ...errors(
          [400, 'Malformed URL (invalid percent-encoding)'],
          401,
          [404, 'No application for this reference'],
          503,
        ),
      },
    },
  },
};
