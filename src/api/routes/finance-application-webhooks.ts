import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { isValidWebhookHash } from '../../security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../shared/finance-application';
import { financeApplicationWorkflowId, REFERENCE_PATTERN } from '../../shared/ids';
import type { AppDeps } from '../app';
import { HttpError, isTemporalUnavailable } from '../errors';

/** The bank's finance-application webhook carries one id; anything much bigger is not the bank. */
export const FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT = '16kb';

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
 */
export function financeApplicationWebhookRoutes(deps: AppDeps): Router {
  const router = Router();
  const count = (outcome: string) => deps.metrics.webhooks.inc({ kind: KIND, outcome });
  const parseJson = express.json({ limit: FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT, type: () => true });

  const verify = (req: Request<{ ref: string; hash?: string }>, res: Response, next: NextFunction) => {
    const { ref } = req.params;
    const hash = req.params.hash ?? (typeof req.query.hash === 'string' ? req.query.hash : '');
    // Read per request (settings may be swapped at runtime); a reference we never issue cannot carry a valid hash.
    if (!REFERENCE_PATTERN.test(ref) || !isValidWebhookHash(deps.webhooks.hashSecret, ref, hash)) {
      count('rejected_hash');
      return next(new HttpError(401, 'Missing or wrong webhook hash'));
    }
    if (!req.is(['application/json', 'application/*+json'])) {
      count('rejected_content_type');
      return next(new HttpError(415, 'Content-Type must be application/json'));
    }
    parseJson(req, res, (err?: unknown) => {
      if (err) count((err as { type?: string }).type === 'entity.too.large' ? 'too_large' : 'rejected_body');
      next(err);
    });
  };

  const receive = async (req: Request<{ ref: string }>, res: Response) => {
    const parsed = FinanceApplicationWebhookSchema.safeParse(req.body);
    if (!parsed.success) {
      count('rejected_body');
      throw new HttpError(
        400,
        'Malformed finance-application webhook body',
        parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      );
    }
    const merchantReference = req.params.ref;
    const { financeApplicationId } = parsed.data;
    const workflowId = financeApplicationWorkflowId(merchantReference);
    const ids = { merchantReference, financeApplicationId, workflowId };
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
          ids,
          'finance-application webhook for a closed or unknown workflow: acknowledged, not delivered',
        );
        res.status(200).json({ status: 'ignored', reason: 'no running workflow for this reference' });
        return;
      }
      count(isTemporalUnavailable(err) ? 'unavailable' : 'error');
      throw err;
    }
    count('accepted');
    deps.logger.info(ids, 'finance-application webhook signalled');
    res.status(202).json({ status: 'accepted', workflowId });
  };

  router.post('/webhooks/finance-applications/:ref/:hash', verify, receive);
  router.post('/webhooks/finance-applications/:ref', verify, receive);
  return router;
}
