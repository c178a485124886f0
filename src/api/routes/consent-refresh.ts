import express, { Router } from 'express';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { getConsentRefreshProgress, startConsentRefresh } from '../../client/consent-refresh';
import { REFRESH_NOT_STARTED, type ConsentRefreshProgress } from '../../shared/consent-refresh';
import { REFERENCE_PATTERN } from '../../shared/ids';
import type { AppDeps } from '../app';
import { merchantOf } from '../authenticate';
import { HttpError, withStartDeadline } from '../errors';
import { DEFAULT_SERVICE_SETTINGS, SETTING_BOUNDS } from '../../shared/application-settings';
import { durationField } from '../settings-schemas';

const StartRefreshBody = z
  .object({
    expectedBankCodes: z.array(z.string().trim().min(1).max(64)).max(100).optional(),
    timeout: durationField(SETTING_BOUNDS.refreshTimeoutMs).optional(),
    quietPeriod: durationField(SETTING_BOUNDS.refreshQuietPeriodMs).optional(),
  })
  .strict();

const consentIdOf = (raw: string | string[] | undefined): string => {
  const consentId = typeof raw === 'string' ? raw : '';
  if (!REFERENCE_PATTERN.test(consentId)) throw new HttpError(400, 'consentId must match [A-Za-z0-9._~-]{1,128}');
  return consentId;
};

/**
 * Merchant facade for consent refreshes (DESIGN.md contract), a thin layer over src/client/consent-refresh.ts:
 * - `POST /consents/:consentId/refresh` `{ expectedBankCodes?, timeout?, quietPeriod? }` → 202 `{ consentId,
 *   workflowId, taskId }`: starts a refresh or attaches to the running one (same taskId).
 *   Without expectedBankCodes, the refresh waits for the banks learned from the consent's earlier refreshes.
 * - `GET /consents/:consentId/refresh` → progress of the latest refresh, amended by its late bank reports
 *   (`late: true` banks, `lateReports`); 404 if none was ever started.
 */
export function consentRefreshRoutes(deps: AppDeps): Router {
  const router = Router();
  const json = express.json({ limit: '16kb' });

  router.post('/consents/:consentId/refresh', json, async (req, res) => {
    const consentId = consentIdOf(req.params.consentId);
    // No body (or an empty one) is `{}`; a body that is not JSON is refused, not ignored.
    const hasContent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (hasContent && !req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const body = StartRefreshBody.parse(req.body ?? {});
    // The operator's defaults (REFRESH_TIMEOUT, REFRESH_QUIET_PERIOD) unless the request sets its own.
    const defaults = (deps.settings ?? DEFAULT_SERVICE_SETTINGS).refresh;
    const timeout = body.timeout ?? defaults.timeoutMs;
    // With expected banks the refresh ends when they all reported: a quiet period applies only when asked for.
    const quietPeriod = body.quietPeriod ?? (body.expectedBankCodes?.length ? undefined : defaults.quietPeriodMs);
    try {
      const started = await withStartDeadline(deps, 'Starting the refresh', () =>
        startConsentRefresh(
          deps.client,
          { consentId, expectedBankCodes: body.expectedBankCodes, timeout, quietPeriod },
          { taskQueue: deps.taskQueue, lateReportsCallbackUrl: deps.transactionsCallbackUrl },
        ),
      );
      deps.logger.info(
        { merchant: merchantOf(res), consentId, taskId: started.taskId, workflowId: started.workflowId },
        'consent refresh started or attached',
      );
      res.status(202).json({ consentId, workflowId: started.workflowId, taskId: started.taskId });
    } catch (err) {
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === REFRESH_NOT_STARTED) {
        throw new HttpError(502, `The bank did not start the refresh: ${cause.message}`);
      }
      throw err;
    }
  });

  router.get('/consents/:consentId/refresh', async (req, res) => {
    const consentId = consentIdOf(req.params.consentId);
    let progress: ConsentRefreshProgress;
    try {
      progress = await getConsentRefreshProgress(deps.client, consentId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        throw new HttpError(404, `No refresh was started for consent ${consentId}`);
      throw err;
    }
    res.json({ ...progress, taskId: progress.taskId ?? null });
  });

  return router;
}
