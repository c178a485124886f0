import type { Request, RequestHandler } from 'express';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  getConsentRefreshProgress,
  RefreshOfPreviousOwnerRunningError,
  startConsentRefresh,
} from '../../../client/consent-refresh';
import { REFRESH_NOT_STARTED, type ConsentRefreshProgress } from '../../../shared/consent-refresh';
import type { MerchantDirectory } from '../../../config/merchants';
import type { Logger } from '../../../telemetry/logging';
import { merchantOf, scopeOf } from '../../authenticate';
import { ConsentHeldByAnotherError, ConsentNotFoundError, consentOwner } from '../../../client/consent-claims';
import type { ConsentAssignment } from '../../../shared/consent-assignment';
import type { Metrics } from '../../metrics';
import { ConsentClaimConflicts, consentAssignmentOf } from '../../consent-assignment';
import { withStartDeadline, type StartDeadlineDeps } from '../../deadlines';
import { HttpError, parseInput } from '../../problem-details';
import { sendAs } from '../../openapi/describe';
import { DEFAULT_SERVICE_SETTINGS, type ServiceSettings } from '../../../shared/application-settings';
import { ConsentParams, StartRefreshBody, RefreshStartedSchema, RefreshProgressSchema } from './schemas';
import { NoQuery } from '../../openapi/describe';
import type { BudgetDeps, MerchantBudgets } from '../../budgets';

/**
 * The consent of a `/consents/:consentId…` request, once its path and query are valid (its description's schemas:
 * the pattern, and no query parameter at all); else a 400 naming the field.
 */
export const consentIdOf = (req: Request): string => {
  const { consentId } = parseInput(ConsentParams, req.params, 'path');
  parseInput(NoQuery, req.query, 'query');
  return consentId;
};

export interface ConsentRefreshRouteDeps extends StartDeadlineDeps, BudgetDeps {
  client: Client;
  taskQueue: string;
  /** The merchants: each one's transactionEvents callback (where late bank reports go). */
  merchants: Pick<MerchantDirectory, 'resolve' | 'ids'>;
  /** CONSENT_ASSIGNMENT's rule: whether a refresh of a free consent claims it (`merchant`) or is a 404. */
  consentAssignment?: ConsentAssignment;
  metrics: BudgetDeps['metrics'] & Pick<Metrics, 'consentClaimConflicts'>;
  /** The operator's refresh defaults (REFRESH_TIMEOUT, REFRESH_QUIET_PERIOD); absent: the built-in ones. */
  settings?: ServiceSettings;
  logger: Logger;
}

/** `POST /consents/:consentId/refresh`: starts the consent's refresh, or attaches to the one running. */
export function startRefresh(
  deps: ConsentRefreshRouteDeps,
  budgets: Pick<MerchantBudgets, 'totals'>,
  conflicts: ConsentClaimConflicts,
): RequestHandler {
  const selfClaim = consentAssignmentOf(deps) === 'merchant';
  return async (req, res) => {
    const consentId = consentIdOf(req);
    // No body (or an empty one) is `{}`; a body that is not JSON is refused, not ignored.
    const hasContent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (hasContent && !req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const body = parseInput(StartRefreshBody, req.body ?? {}, 'body');
    // The operator's defaults (REFRESH_TIMEOUT, REFRESH_QUIET_PERIOD) unless the request sets its own.
    const defaults = (deps.settings ?? DEFAULT_SERVICE_SETTINGS).refresh;
    const timeout = body.timeout ?? defaults.timeoutMs;
    // With expected banks the refresh ends when they all reported: a quiet period applies only when asked for.
    const quietPeriod = body.quietPeriod ?? (body.expectedBankCodes?.length ? undefined : defaults.quietPeriodMs);
    const scope = scopeOf(res);
    // A refresh claims an unclaimed consent: the merchant's claimed consents bound it as PUT /consents/:id.
    const admission = await budgets.totals.admit(
      res,
      scope,
      'consents',
      async () => (await consentOwner(deps.client, consentId)) === scope.merchantId,
    );
    try {
      const started = await withStartDeadline(deps, 'Starting the refresh', () =>
        startConsentRefresh(
          deps.client,
          scope,
          { consentId, expectedBankCodes: body.expectedBankCodes, timeout, quietPeriod },
          {
            taskQueue: deps.taskQueue,
            lateReportsCallbackUrl: deps.merchants.resolve(scope.merchantId).transactionsCallbackUrl,
            selfClaim,
          },
        ),
      );
      deps.logger.info(
        { merchant: merchantOf(res), consentId, taskId: started.taskId, workflowId: started.workflowId },
        'consent refresh started or attached',
      );
      // Whether this refresh claimed the consent is not told: counted as a claim until the next count.
      admission.settle(true);
      res.setHeader('Location', `/consents/${encodeURIComponent(consentId)}/refresh`);
      sendAs(res, 202, RefreshStartedSchema, { consentId, workflowId: started.workflowId, taskId: started.taskId });
    } catch (err) {
      admission.settle(false);
      if (err instanceof ConsentHeldByAnotherError) conflicts.refused(err, scope.merchantId, 'refresh');
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      if (err instanceof RefreshOfPreviousOwnerRunningError) throw new HttpError(409, err.message, undefined, 60);
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === REFRESH_NOT_STARTED) {
        throw new HttpError(502, `The bank did not start the refresh: ${cause.message}`);
      }
      throw err;
    }
  };
}

/** `GET /consents/:consentId/refresh`: the latest refresh's progress, with its late bank reports. */
export function readRefresh(deps: ConsentRefreshRouteDeps): RequestHandler {
  return async (req, res) => {
    const consentId = consentIdOf(req);
    const scope = scopeOf(res);
    let progress: ConsentRefreshProgress & { lateReports: number };
    try {
      progress = await getConsentRefreshProgress(deps.client, scope, consentId);
    } catch (err) {
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      // Only the owner learns that its consent has no refresh: the legacy merchant, which may read the refreshes of
      // consents nobody claimed, gets for a free consent without one the answer any unknown consent gets.
      if (err instanceof WorkflowNotFoundError) {
        if ((await consentOwner(deps.client, consentId)) !== scope.merchantId) throw notYours(consentId);
        throw new HttpError(404, `No refresh was started for consent ${consentId}`);
      }
      throw err;
    }
    sendAs(res, 200, RefreshProgressSchema, { ...progress, taskId: progress.taskId ?? null });
  };
}

/** Another merchant's consent answers as an unknown one: nothing tells that it exists. */
export const notYours = (consentId: string) => new HttpError(404, `No consent ${consentId} for this merchant`);
