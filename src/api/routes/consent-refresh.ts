import express, { type Router } from 'express';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import {
  getConsentRefreshProgress,
  RefreshOfPreviousOwnerRunningError,
  startConsentRefresh,
} from '../../client/consent-refresh';
import { REFRESH_NOT_STARTED, type ConsentRefreshProgress } from '../../shared/consent-refresh';
import { REFERENCE_PATTERN } from '../../shared/ids';
import type { AppDeps } from '../app';
import { merchantOf, scopeOf } from '../authenticate';
import { ConsentNotFoundError } from '../../client/consent-claims';
import { withStartDeadline } from '../deadlines';
import { HttpError } from '../problem-details';
import { errors, json, merchantKeyRequired, sendAs, Tag, type ApiPaths } from '../openapi/describe';
import { DEFAULT_SERVICE_SETTINGS, formatDuration, SETTING_BOUNDS } from '../../shared/application-settings';
import { durationField } from '../settings-schemas';
import { tracedRouter } from '../../telemetry/express-routes';

const bounded = (name: 'refreshTimeoutMs' | 'refreshQuietPeriodMs'): string =>
  `milliseconds or "30s", "5m", "1h"; between ${formatDuration(SETTING_BOUNDS[name].min)} and ${formatDuration(SETTING_BOUNDS[name].max)}`;

export const StartRefreshBody = z
  .object({
    expectedBankCodes: z.array(z.string().trim().min(1).max(64)).max(100).optional().meta({
      description: 'Banks expected to report: the refresh ends once all did (an empty list: the quiet period)',
    }),
    timeout: durationField(SETTING_BOUNDS.refreshTimeoutMs)
      .optional()
      .meta({
        description: `Upper bound of the whole refresh (default REFRESH_TIMEOUT); ${bounded('refreshTimeoutMs')}`,
      }),
    quietPeriod: durationField(SETTING_BOUNDS.refreshQuietPeriodMs)
      .optional()
      .meta({
        description: `Ends the refresh this long after the last bank reported (default REFRESH_QUIET_PERIOD); ${bounded('refreshQuietPeriodMs')}`,
      }),
  })
  .strict()
  .meta({ id: 'StartRefreshRequest' });

/** 202 of POST /consents/:consentId/refresh. */
export const RefreshStartedSchema = z
  .object({
    consentId: z.string(),
    workflowId: z.string(),
    taskId: z.string().meta({ description: "The bank's refresh task id (the same for every caller of one run)" }),
  })
  .meta({ id: 'RefreshStarted' });

const BankRefreshResultSchema = z
  .object({
    bankCode: z.string(),
    bankName: z.string(),
    taskStatus: z.string(),
    succeeded: z.boolean(),
    accounts: z.array(z.object({ accountId: z.string(), eventType: z.string() })),
    at: z.string().meta({ description: 'When the report was recorded (ISO 8601)' }),
    late: z.literal(true).optional().meta({ description: 'Reported after the refresh had closed' }),
  })
  .meta({ id: 'BankRefreshResult' });

/** GET /consents/:consentId/refresh: the latest refresh's progress, amended by its late bank reports. */
export const RefreshProgressSchema = z
  .object({
    consentId: z.string(),
    taskId: z.string().nullable().meta({ description: 'Null until PUT /refresh answered' }),
    done: z.boolean(),
    banks: z.array(BankRefreshResultSchema),
    missing: z.array(z.string()).meta({ description: 'Expected (or learned) banks that have not reported' }),
    expectedBankCodes: z.array(z.string()).optional(),
    staleEvents: z.number().int(),
    duplicateEvents: z.number().int(),
    endedBy: z.enum(['all-reported', 'quiet-period', 'timeout']).optional(),
    error: z.string().optional().meta({ description: 'Set (with done) when the bank did not start the task' }),
    knownBankCodes: z.array(z.string()).optional(),
    handedOffEvents: z.number().int().optional(),
    lateReports: z.number().int().meta({ description: 'Banks of this task that reported late, merged into banks' }),
  })
  .meta({ id: 'RefreshProgress' });

export const ConsentParams = z.object({
  consentId: z.string().meta({ description: 'The consent ([A-Za-z0-9._~-]{1,128})' }),
});

export const consentIdOf = (raw: string | string[] | undefined): string => {
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
  const router = tracedRouter();
  const json = express.json({ limit: '16kb' });

  // Described in consentRefreshPaths below.
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
    const scope = scopeOf(res, deps.merchants);
    try {
      const started = await withStartDeadline(deps, 'Starting the refresh', () =>
        startConsentRefresh(
          deps.client,
          scope,
          { consentId, expectedBankCodes: body.expectedBankCodes, timeout, quietPeriod },
          {
            taskQueue: deps.taskQueue,
            lateReportsCallbackUrl: deps.merchants.resolve(scope.merchantId).transactionsCallbackUrl,
          },
        ),
      );
      deps.logger.info(
        { merchant: merchantOf(res), consentId, taskId: started.taskId, workflowId: started.workflowId },
        'consent refresh started or attached',
      );
      sendAs(res, 202, RefreshStartedSchema, { consentId, workflowId: started.workflowId, taskId: started.taskId });
    } catch (err) {
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      if (err instanceof RefreshOfPreviousOwnerRunningError) throw new HttpError(409, err.message, undefined, 60);
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === REFRESH_NOT_STARTED) {
        throw new HttpError(502, `The bank did not start the refresh: ${cause.message}`);
      }
      throw err;
    }
  });

  router.get('/consents/:consentId/refresh', async (req, res) => {
    const consentId = consentIdOf(req.params.consentId);
    let progress: ConsentRefreshProgress & { lateReports: number };
    try {
      progress = await getConsentRefreshProgress(deps.client, scopeOf(res, deps.merchants), consentId);
    } catch (err) {
      if (err instanceof ConsentNotFoundError) throw notYours(consentId);
      if (err instanceof WorkflowNotFoundError)
        throw new HttpError(404, `No refresh was started for consent ${consentId}`);
      throw err;
    }
    sendAs(res, 200, RefreshProgressSchema, { ...progress, taskId: progress.taskId ?? null });
  });

  return router;
}

/** Another merchant's consent answers as an unknown one: nothing tells that it exists. */
export const notYours = (consentId: string) => new HttpError(404, `No consent ${consentId} for this merchant`);

/** OpenAPI description of this module's routes (src/api/openapi/document.ts). */
export const consentRefreshPaths: ApiPaths = {
  '/consents/{consentId}/refresh': {
    post: {
      'x-listener': 'internal',
      operationId: 'startConsentRefresh',
      tags: [Tag.Consents],
      summary: 'Start a refresh of the consent, or attach to the running one',
      description:
        'Answers once the bank gave the task id (PUT /refresh). A second request while a refresh runs attaches to ' +
        "it and gets the same taskId (its own inputs are ignored). Without expectedBankCodes, the banks learned from the consent's earlier refreshes are awaited. " +
        'No body is the same as `{}`. Body up to 16 KiB.',
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams },
      requestBody: { required: false, content: { 'application/json': { schema: StartRefreshBody } } },
      responses: {
        '202': json(RefreshStartedSchema, 'Started, or attached to the running refresh'),
        ...errors(
          [400, 'Invalid consentId or body'],
          401,
          [404, "The consent is another merchant's"],
          [409, "A refresh started by the consent's previous owner still runs: retry after Retry-After"],
          413,
          415,
          429,
          [502, 'The bank did not start the refresh'],
          [503, 'Temporal unavailable, or the bank did not answer within the start deadline: retry the same request'],
        ),
      },
    },
    get: {
      'x-listener': 'internal',
      operationId: 'getConsentRefresh',
      tags: [Tag.Consents],
      summary: "Progress of the consent's latest refresh",
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams },
      responses: {
        '200': json(RefreshProgressSchema, 'Banks reported so far (late reports merged), missing ones, done'),
        ...errors(
          [400, 'Invalid consentId'],
          401,
          [404, "No refresh was ever started for this consent, or the consent is another merchant's"],
          429,
          503,
        ),
      },
    },
  },
};
