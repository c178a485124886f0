import type { Request, Router } from 'express';
import { z } from 'zod';
import { isValidWebhookHash } from '../../security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../shared/finance-application';
import { financeApplicationWorkflowId, REFERENCE_PATTERN } from '../../shared/ids';
import type { AppDeps } from '../app';
import { parsedWith, webhookReceiver } from '../webhook-receiver';
import { tracedRouter } from '../../telemetry/express-routes';

export { SIGNAL_DEADLINE_MS } from '../webhook-receiver';

/** The bank's finance-application webhook carries one id; anything much bigger is not the bank. */
export const FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT = 16 * 1024;

/** bank-interface 6.1: the body carries financeApplicationId; other fields are ignored. */
export const FinanceApplicationWebhookSchema = z.object({
  financeApplicationId: z.string().trim().min(1).max(256),
});

const KIND = 'financeApplication';

type Params = { ref?: string; hash?: string };
const referenceOf = (req: Request): string => (req.params as Params).ref ?? '';

/**
 * `POST /webhooks/finance-applications/:ref/:hash` and `POST /webhooks/finance-applications/:ref?hash=`: the
 * bank's status-change webhook, through the receiver pipeline (src/api/webhook-receiver.ts). Authenticity: the
 * hash of the reference under WEBHOOK_HASH_SECRET or, after a rotation, WEBHOOK_HASH_SECRET_PREVIOUS (both checked
 * in constant time, no early exit); then exactly one signal to the reference's workflow. A closed or unknown
 * workflow: 200 `ignored`. The workflow, not the receiver, decides whether the financeApplicationId is its own.
 */
export function financeApplicationWebhookRoutes(deps: AppDeps): Router {
  const router = tracedRouter();
  const receive = webhookReceiver<z.infer<typeof FinanceApplicationWebhookSchema>>(deps, {
    kind: KIND,
    limitBytes: FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT,
    rejectAuth(req) {
      const merchantReference = referenceOf(req);
      const hash = (req.params as Params).hash ?? (typeof req.query.hash === 'string' ? req.query.hash : '');
      // Read per request (settings may be swapped at runtime); a reference we never issue cannot carry a valid hash.
      const { hashSecret, previousHashSecret } = deps.webhooks;
      if (
        REFERENCE_PATTERN.test(merchantReference) &&
        isValidWebhookHash([hashSecret, previousHashSecret], merchantReference, hash)
      )
        return undefined;
      return { outcome: 'rejected_hash', message: 'Missing or wrong webhook hash' };
    },
    parse: (body) =>
      parsedWith(KIND, 'Malformed finance-application webhook body', FinanceApplicationWebhookSchema.safeParse(body)),
    async deliver({ financeApplicationId }, req) {
      const workflowId = financeApplicationWorkflowId(referenceOf(req));
      await deps.client.workflow
        .getHandle(workflowId)
        .signal(financeApplicationStatusChangedSignal, { financeApplicationId });
      return { workflowId };
    },
    logIds: ({ financeApplicationId }, req) => ({
      merchantReference: referenceOf(req),
      financeApplicationId,
      workflowId: financeApplicationWorkflowId(referenceOf(req)),
    }),
    ignoredReason: 'no running workflow for this reference',
  });

  router.post('/webhooks/finance-applications/:ref/:hash', receive);
  router.post('/webhooks/finance-applications/:ref', receive);
  return router;
}
