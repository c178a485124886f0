import { Router, type Request, type Response } from 'express';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { isValidWebhookHash } from '../../security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../shared/finance-application';
import { financeApplicationWorkflowId, REFERENCE_PATTERN } from '../../shared/ids';
import type { AppDeps } from '../app';
import { HttpError, isTemporalUnavailable } from '../errors';
import { BodyTooLargeError, hasJsonContentType, readJsonBody, sendJson } from '../json-body';

/** The bank's finance-application webhook carries one id; anything much bigger is not the bank. */
export const FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT = 16 * 1024;

/** Under the bank's per-attempt timeout: Temporal that cannot take the signal by then gets a 503, not a hang. */
export const SIGNAL_DEADLINE_MS = 4_000;

/** bank-interface 6.1: the body carries financeApplicationId; other fields are ignored. */
export const FinanceApplicationWebhookSchema = z.object({
  financeApplicationId: z.string().trim().min(1).max(256),
});

const KIND = 'financeApplication';

/**
 * `POST /webhooks/finance-applications/:ref/:hash` and `POST /webhooks/finance-applications/:ref?hash=`: the
 * bank's status-change webhook. Checks, in order: hash of the reference in constant time (401), content type
 * (415), size (413), JSON and shape (400); then exactly one signal to the reference's workflow.
 * 202 once Temporal accepted the signal; 200 `ignored` when the workflow is closed or unknown (the bank stops
 * retrying); 503 when Temporal cannot take it (the bank retries). The workflow, not the receiver, decides
 * whether the financeApplicationId is its own.
 * Hot path: one body read and JSON.parse, one zod check, one signal, one counter; the accepted webhook is logged
 * at debug only (the signal is in the workflow's history and the counter counts it).
 */
export function financeApplicationWebhookRoutes(deps: AppDeps): Router {
  const router = Router();
  const count = (outcome: string) => deps.metrics.webhooks.inc({ kind: KIND, outcome });

  const receive = async (req: Request<{ ref: string; hash?: string }>, res: Response) => {
    const merchantReference = req.params.ref;
    const hash = req.params.hash ?? (typeof req.query.hash === 'string' ? req.query.hash : '');
    // Read per request (settings may be swapped at runtime); a reference we never issue cannot carry a valid hash.
    if (
      !REFERENCE_PATTERN.test(merchantReference) ||
      !isValidWebhookHash(deps.webhooks.hashSecret, merchantReference, hash)
    ) {
      count('rejected_hash');
      throw new HttpError(401, 'Missing or wrong webhook hash');
    }
    if (!hasJsonContentType(req)) {
      count('rejected_content_type');
      throw new HttpError(415, 'Content-Type must be application/json');
    }
    let body: unknown;
    try {
      body = await readJsonBody(req, FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT);
    } catch (err) {
      count(err instanceof BodyTooLargeError ? 'too_large' : 'rejected_body');
      throw err;
    }
    const parsed = FinanceApplicationWebhookSchema.safeParse(body);
    if (!parsed.success) {
      count('rejected_body');
      throw new HttpError(
        400,
        'Malformed finance-application webhook body',
        parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      );
    }
    const { financeApplicationId } = parsed.data;
    const workflowId = financeApplicationWorkflowId(merchantReference);
    try {
      await deps.client.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
        deps.client.workflow
          .getHandle(workflowId)
          .signal(financeApplicationStatusChangedSignal, { financeApplicationId }),
      );
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        count('no_target');
        deps.logger.warn(
          { merchantReference, financeApplicationId, workflowId },
          'finance-application webhook for a closed or unknown workflow: acknowledged, not delivered',
        );
        sendJson(res, 200, { status: 'ignored', reason: 'no running workflow for this reference' });
        return;
      }
      count(isTemporalUnavailable(err) ? 'unavailable' : 'error');
      throw err;
    }
    count('accepted');
    deps.logger.debug({ merchantReference, financeApplicationId, workflowId }, 'finance-application webhook signalled');
    sendJson(res, 202, { status: 'accepted', workflowId });
  };

  router.post('/webhooks/finance-applications/:ref/:hash', receive);
  router.post('/webhooks/finance-applications/:ref', receive);
  return router;
}
