import express, { Router } from 'express';
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

const httpUrl = z.url({ protocol: /^https?$/ });

/** POST /applications: our two fields plus the bank's create request (redirectUrl and anything else, passed on). */
export const StartApplicationSchema = z.looseObject({
  merchantReference: z.string().regex(REFERENCE_PATTERN, 'letters, digits and . _ ~ - (1 to 128)'),
  redirectUrl: httpUrl,
  /** Ours, not the bank's: where each status change is pushed. */
  callbackUrl: httpUrl.optional(),
  /** Ours, not the bank's: this application's poll policy and deadline, over the operator's defaults. */
  settings: ApplicationSettingsSchema.optional(),
});

/**
 * The merchant facade over src/client/finance-applications.ts (DESIGN.md contract):
 * - `POST /applications` → 201 (200 when the reference already existed) `{ merchantReference, workflowId,
 *   financeApplicationId, bank }`; 400 when `callbackUrl` is outside CALLBACK_ALLOWED_ORIGINS (here, or in the
 *   worker's verdict), 422 when the bank refused the application, 502 when it could not be reached.
 * - `GET /applications/:ref` → `{ merchantReference, financeApplicationId, status, done, history }`; 404 unknown.
 */
export function financeApplicationRoutes(deps: AppDeps): Router {
  const router = Router();

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
        created: started.created,
      },
      started.created ? 'finance application started' : 'finance application already existed',
    );
    const { created: _created, ...body } = started;
    res.status(started.created ? 201 : 200).json(body);
  });

  router.get('/applications/:ref', async (req, res) => {
    const { ref } = req.params;
    if (!REFERENCE_PATTERN.test(ref)) throw new HttpError(404, `No finance application for reference ${ref}`);
    try {
      const s = await getFinanceApplication(deps.client, ref);
      res.json({
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
