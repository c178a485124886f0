import type { RequestHandler } from 'express';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import {
  FinanceApplicationConflictError,
  FinanceApplicationFailureType,
  FinanceApplicationWaits,
  getFinanceApplicationView,
  phaseOf,
  listFinanceApplications,
  startFinanceApplication,
  TooManyStatusWaitsError,
  waitForFinanceApplicationChange,
  type FinanceApplicationState,
} from '../../../client/finance-applications';
import { CALLBACK_ALLOWED_ORIGINS, checkCallbackUrl } from '../../../security/callback-url';
import { isDone, type ApplicationPhase } from '../../../shared/application-phase';
import {
  applicationSettingsFor,
  DEFAULT_SERVICE_SETTINGS,
  formatDuration,
  SettingsError,
  type ServiceSettings,
} from '../../../shared/application-settings';
import { applicationOverrides, requestFieldOf, type ApplicationSettingsBody } from '../../settings-schemas';
import type { MerchantDirectory } from '../../../config/merchants';
import type { Logger } from '../../../telemetry/logging';
import type { DrainSignals } from '../../drain';
import { merchantOf, scopeOf } from '../../authenticate';
import type { BudgetDeps, MerchantBudgets } from '../../budgets';
import { applicationExists } from '../../../client/merchant-totals';
import { withReadDeadline, withStartDeadline, type StartDeadlineDeps } from '../../deadlines';
import {
  HttpError,
  parseInput,
  PROBLEM_TITLES,
  ProblemError,
  ProblemType,
  ValidationError,
  type FieldError,
} from '../../problem-details';
import { NoQuery, sendAs } from '../../openapi/describe';
import {
  StartApplicationSchema,
  ApplicationStartedSchema,
  ApplicationSchema,
  ListApplicationsQuerySchema,
  ListApplicationsResponseSchema,
  GetApplicationQuerySchema,
  RefParams,
  WAIT_OUTCOME_HEADER,
} from './schemas';

export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

/** The settings a request may set (`settings` of POST /applications, by the workflow's names). */
const POLL_SETTING_FIELDS = [
  'fastPollIntervalMs',
  'responsiveWindowMs',
  'pollBackoffFactor',
  'slowPollIntervalMs',
  'noWebhookPollIntervalMs',
  'deadlineMs',
] as const;

/** The settings whose value is a poll interval: a merchant's floor (minPollInterval) bounds them. */
const POLL_INTERVAL_FIELDS = ['fastPollIntervalMs', 'slowPollIntervalMs', 'noWebhookPollIntervalMs'] as const;

export interface FinanceApplicationRouteDeps extends StartDeadlineDeps, BudgetDeps {
  /** How long a plain read waits for a worker to answer its query (DEFAULT_READ_DEADLINE_MS). */
  readDeadlineMs?: number;
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

/** `GET /applications`: the caller's applications, filtered and paged. */
export function listApplications(deps: FinanceApplicationRouteDeps): RequestHandler {
  return async (req, res) => {
    const { pageSize, pageToken, ...filter } = parseInput(ListApplicationsQuerySchema, req.query, 'query');
    let page;
    try {
      page = await listFinanceApplications(
        deps.client,
        scopeOf(res),
        filter,
        { pageSize, pageToken },
        { terminalStatuses: (deps.settings ?? DEFAULT_SERVICE_SETTINGS).applications.terminalStatuses },
      );
    } catch (err) {
      if (err instanceof RangeError)
        throw new ValidationError([{ in: 'query', field: 'pageToken', detail: err.message }]);
      throw err;
    }
    sendAs(res, 200, ListApplicationsResponseSchema, page);
  };
}

/** `POST /applications` (after the creations budget and the JSON body): update-with-start of the application. */
export function startApplication(
  deps: FinanceApplicationRouteDeps,
  budgets: Pick<MerchantBudgets, 'totals'>,
): RequestHandler {
  return async (req, res) => {
    if (!req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    parseInput(NoQuery, req.query, 'query');
    const {
      merchantReference,
      callbackUrl,
      settings: asked,
      ...application
    } = parseInput(StartApplicationSchema, req.body, 'body');
    const scope = scopeOf(res);
    const merchant = deps.merchants.resolve(scope.merchantId);
    const settings = settingsOf(deps, asked, merchant.limits.minPollIntervalMs);
    // Only the settings the request names are compared with an existing application's (the rest are defaults).
    const overrides = applicationOverrides(asked);
    const settingsNamed = POLL_SETTING_FIELDS.filter((field) => overrides[field] !== undefined);
    if (callbackUrl !== undefined) {
      const verdict = checkCallbackUrl(callbackUrl, merchant.callbacks.allowList);
      if (!verdict.allowed) throw callbackRefused(verdict.reason, verdict.origin, verdict.variable);
    }
    // The merchant's open applications, counted in Temporal: at its most, only a reference that exists passes.
    const admission = await budgets.totals.admit(res, scope, 'open_applications', () =>
      applicationExists(deps.client, scope, merchantReference),
    );
    let started;
    try {
      started = await withStartDeadline(deps, 'Creating the finance application', () =>
        startFinanceApplication(
          deps.client,
          scope,
          { merchantReference, callbackUrl, application, settings },
          { taskQueue: deps.taskQueue, settingsNamed },
        ),
      );
    } catch (err) {
      admission.settle(false);
      throw creationError(err);
    }
    admission.settle(started.created);
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
    if (started.created) res.setHeader('Location', applicationPath(merchantReference));
    // `bank` is the create answer as the activity kept it: without our webhookUrl (src/activities/index.ts).
    sendAs(res, started.created ? 201 : 200, ApplicationStartedSchema, body);
  };
}

/**
 * `GET /applications/:ref`, and with `waitForChangeFrom` the long-poll: waits of this process are shared (`waits`,
 * one update per application and from-status), and each holds one of the merchant's long-polls.
 */
export function readApplication(
  deps: FinanceApplicationRouteDeps,
  waits: FinanceApplicationWaits,
  longPolls: MerchantBudgets['longPolls'],
): RequestHandler {
  return async (req, res) => {
    const { ref } = parseInput(RefParams, req.params, 'path');
    const { waitForChangeFrom, timeout } = parseInput(GetApplicationQuerySchema, req.query, 'query');
    const scope = scopeOf(res);
    try {
      if (waitForChangeFrom === undefined) {
        const { state, phase } = await withReadDeadline(deps, 'Reading the finance application', () =>
          getFinanceApplicationView(deps.client, scope, ref),
        );
        sendAs(res, 200, ApplicationSchema, applicationBody(state, phase));
        return;
      }
      // The merchant's long-poll budget: a slot held until the answer, or until the merchant hangs up.
      const release = longPolls.tryAcquire(scope.merchantId);
      if (!release) throw longPolls.refusal(scope.merchantId, res);
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
      // A status wait answers with the state; its run's status (open, or closed) says the rest of the phase.
      const phase = await phaseOf(deps.client, scope, ref, state);
      res.setHeader(WAIT_OUTCOME_HEADER, outcome);
      sendAs(res, 200, ApplicationSchema, applicationBody(state, phase));
    } catch (err) {
      if (res.destroyed || res.writableEnded) return; // the merchant hung up: nobody to answer
      if (err instanceof WorkflowNotFoundError) throw new HttpError(404, `No finance application for reference ${ref}`);
      if (err instanceof TooManyStatusWaitsError)
        throw new ProblemError(429, ProblemType.TooManyWaits, PROBLEM_TITLES[ProblemType.TooManyWaits], err.message, {
          retryAfterSeconds: 1,
        });
      throw err;
    }
  };
}

function applicationBody(s: FinanceApplicationState, phase: ApplicationPhase): z.input<typeof ApplicationSchema> {
  return {
    merchantReference: s.merchantReference,
    financeApplicationId: s.financeApplicationId ?? null,
    status: s.status ?? null,
    phase,
    done: isDone(phase),
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
    throw new ValidationError(
      belowFloor.map((field) =>
        settingsField(field, `must be at least ${formatDuration(minPollIntervalMs)} for this merchant`),
      ),
    );
  }
  try {
    return applicationSettingsFor((deps.settings ?? DEFAULT_SERVICE_SETTINGS).applications, overrides);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    throw new ValidationError(err.problems.map((p) => settingsField(p.field, p.message)));
  }
}

/** A body field under settings, by the workflow's name (`deadlineMs` → settings.deadline). */
function settingsField(field: string, detail: string): FieldError {
  const name = requestFieldOf(field);
  return { in: 'body', field: `settings.${name}`, pointer: `#/settings/${name}`, detail };
}

/** The application's URL on the facade (the 201's Location). */
const applicationPath = (merchantReference: string) => `/applications/${encodeURIComponent(merchantReference)}`;

/** A request field as the HTTP body names it: `application.amount` → amount, `settings.deadlineMs` → settings.deadline. */
function requestField(clientField: string): string {
  if (clientField.startsWith('application.')) return clientField.slice('application.'.length);
  if (clientField.startsWith('settings.')) return `settings.${requestFieldOf(clientField.slice('settings.'.length))}`;
  return clientField;
}

/** The bank's refusal is the merchant's to fix (422); an unreachable bank is ours (502). Others pass through. */
function creationError(err: unknown): unknown {
  if (err instanceof FinanceApplicationConflictError) {
    const fields = err.fields.map(requestField);
    const conflict = new ProblemError(
      409,
      ProblemType.Conflict,
      PROBLEM_TITLES[ProblemType.Conflict],
      `merchantReference ${err.merchantReference} is already used by an application created with a different ` +
        `${fields.join(', ')}: use a new reference, or send the same body again to read the existing application`,
      { details: fields.map((field) => ({ path: field, message: 'differs from the existing application' })) },
    );
    conflict.fieldErrors = fields.map((field) => ({
      in: 'body',
      field,
      pointer: `#/${field.replaceAll('.', '/')}`,
      detail: 'differs from the existing application',
    }));
    return conflict;
  }
  if (!(err instanceof WorkflowUpdateFailedError) || !(err.cause instanceof ApplicationFailure)) return err;
  const { type, message } = err.cause;
  if (type === FinanceApplicationFailureType.CallbackUrlNotAllowed) {
    // The worker's verdict (its allow-list may differ from this process's): the same answer as a refusal here.
    const [details] = (err.cause.details ?? []) as {
      callbackOrigin?: string | null;
      reason?: string;
      variable?: string;
    }[];
    return callbackRefused(details?.reason ?? message, details?.callbackOrigin ?? undefined, details?.variable);
  }
  if (type === FinanceApplicationFailureType.CreateRejected) return new HttpError(422, `The bank refused: ${message}`);
  if (type === FinanceApplicationFailureType.CreateFailed)
    return new HttpError(502, `The bank could not be reached: ${message}`);
  return err;
}

/**
 * 400 naming the refused origin and the variable that would allow it: MERCHANTS_FILE when the merchant's own
 * callbackAllowedOrigins applied (the reason names the merchant), else CALLBACK_ALLOWED_ORIGINS.
 */
function callbackRefused(reason: string, origin: string | undefined, variable?: string): HttpError {
  return new ProblemError(
    400,
    ProblemType.CallbackUrlRefused,
    PROBLEM_TITLES[ProblemType.CallbackUrlRefused],
    `callbackUrl refused: ${reason}`,
    { details: { field: 'callbackUrl', origin: origin ?? null, variable: variable ?? CALLBACK_ALLOWED_ORIGINS } },
  );
}
