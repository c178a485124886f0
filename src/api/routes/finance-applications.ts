import express, { type Router } from 'express';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import {
  FinanceApplicationFailureType,
  FinanceApplicationWaits,
  getFinanceApplication,
  listFinanceApplications,
  startFinanceApplication,
  TooManyStatusWaitsError,
  waitForFinanceApplicationChange,
  type FinanceApplicationState,
} from '../../client/finance-applications';
import { CALLBACK_ALLOWED_ORIGINS, checkCallbackUrl } from '../../security/callback-url';
import { REFERENCE_PATTERN } from '../../shared/ids';
import { withoutWebhookUrl } from '../../shared/bank-wire';
import {
  applicationSettingsFor,
  DEFAULT_SERVICE_SETTINGS,
  formatDuration,
  SettingsError,
  type ServiceSettings,
} from '../../shared/application-settings';
import { applicationOverrides, requestFieldOf, type ApplicationSettingsBody } from '../settings-schemas';
import type { MerchantDirectory } from '../../config/merchants';
import type { Logger } from '../../telemetry/logging';
import type { DrainSignals } from '../drain';
import { merchantOf, scopeOf } from '../authenticate';
import { LongPollSlots, ProblemType, type BudgetDeps } from '../budgets';
import { withStartDeadline, type StartDeadlineDeps } from '../deadlines';
import { HttpError, ProblemError } from '../problem-details';
import { sendAs } from '../descriptions/describe';
import { tracedRouter } from '../../telemetry/express-routes';
import {
  StartApplicationSchema,
  ApplicationStartedSchema,
  ApplicationSchema,
  ListApplicationsQuerySchema,
  ListApplicationsResponseSchema,
  GetApplicationQuerySchema,
  WAIT_OUTCOME_HEADER,
} from '../descriptions/finance-applications';

export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

/** The settings whose value is a poll interval: a merchant's floor (minPollInterval) bounds them. */
const POLL_INTERVAL_FIELDS = ['fastPollIntervalMs', 'slowPollIntervalMs', 'noWebhookPollIntervalMs'] as const;

export interface FinanceApplicationRouteDeps extends StartDeadlineDeps, BudgetDeps {
  client: Client;
  taskQueue: string;
  /** The merchants: each one's callback allow-list, poll floor and long-poll budget. */
  merchants: MerchantDirectory;
  /** The operator's application defaults; absent: the built-in ones. */
  settings?: ServiceSettings;
  logger: Logger;
  /** The process's shutdown: a long-poll answers when the listeners close (src/api/drain.ts). */
  drain?: Pick<DrainSignals, 'closing' | 'expired'>;
}

/**
 * The merchant facade over src/client/finance-applications.ts:
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
export function financeApplicationRoutes(deps: FinanceApplicationRouteDeps): Router {
  const router = tracedRouter();
  const waits = new FinanceApplicationWaits(deps.client);
  const longPolls = new LongPollSlots(deps);

  // Described in src/api/descriptions/finance-applications.ts.
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
function settingsOf(
  deps: FinanceApplicationRouteDeps,
  asked: ApplicationSettingsBody | undefined,
  minPollIntervalMs: number,
) {
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
