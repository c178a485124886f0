import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { isValidWebhookHash } from '../../../security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../../shared/finance-application';
import { financeApplicationWorkflowId, parseWebhookKey } from '../../../shared/ids';
import type { WebhookSecrets } from '../../../config';
import {
  parsedWith,
  webhookReceiver,
  type WebhookHandler,
  type WebhookReceiverDeps,
  type WebhookRequest,
} from './receiver';
import { FinanceApplicationWebhookSchema } from './schemas';

/** The bank's finance-application webhook carries one id; anything much bigger is not the bank. */
export const FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT = 16 * 1024;

const KIND = 'financeApplication';

/** The application a valid webhook URL names. */
interface WebhookApplication {
  workflowId: string;
  merchantId: string;
  merchantReference: string;
}

const keyOf = (req: WebhookRequest): string => req.params.ref ?? '';

/** The application a webhook URL names (its key is `{merchantId}~{ref}`), when its tenant hash is valid. */
function applicationOf(req: WebhookRequest, secrets: readonly (string | undefined)[]): WebhookApplication | undefined {
  const key = keyOf(req);
  const hash = req.params.hash ?? (typeof req.query.hash === 'string' ? req.query.hash : '');
  const tenant = parseWebhookKey(key);
  const tenantValid =
    tenant !== undefined && isValidWebhookHash(secrets, tenant.merchantReference, hash, tenant.merchantId);
  if (!tenantValid) return undefined;
  return { ...tenant, workflowId: financeApplicationWorkflowId(tenant.merchantId, tenant.merchantReference) };
}

export interface FinanceApplicationWebhookDeps extends WebhookReceiverDeps {
  client: Client;
  /** WEBHOOK_HASH_SECRET[_PREVIOUS]; read per request. */
  webhooks: Pick<WebhookSecrets, 'hashSecret' | 'previousHashSecret'>;
}

/**
 * `POST /webhooks/finance-applications/:ref/:hash` and `POST /webhooks/finance-applications/:ref?hash=`: the
 * bank's status-change webhook, through the receiver pipeline (receiver.ts). Authenticity: the
 * hash of the reference under WEBHOOK_HASH_SECRET or, after a rotation, WEBHOOK_HASH_SECRET_PREVIOUS (both checked
 * in constant time, no early exit); then exactly one signal to the reference's workflow. A closed or unknown
 * workflow: 200 `ignored`. The workflow, not the receiver, decides whether the financeApplicationId is its own.
 */
export function financeApplicationWebhook(deps: FinanceApplicationWebhookDeps): WebhookHandler {
  return webhookReceiver<z.infer<typeof FinanceApplicationWebhookSchema>, WebhookApplication>(deps, {
    kind: KIND,
    limitBytes: FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT,
    authenticate(req) {
      // Read per request (settings may be swapped at runtime); a key we never issue cannot carry a valid hash.
      const { hashSecret, previousHashSecret } = deps.webhooks;
      const application = applicationOf(req, [hashSecret, previousHashSecret]);
      if (application) return { ok: true, caller: application };
      return { ok: false, outcome: 'rejected_hash', message: 'Missing or wrong webhook hash' };
    },
    parse: (body) =>
      parsedWith(KIND, 'Malformed finance-application webhook body', FinanceApplicationWebhookSchema.safeParse(body)),
    async deliver({ financeApplicationId }, { workflowId }) {
      await deps.client.workflow
        .getHandle(workflowId)
        .signal(financeApplicationStatusChangedSignal, { financeApplicationId });
      return { workflowId };
    },
    logIds: ({ financeApplicationId }, application) => ({
      merchant: application.merchantId,
      merchantReference: application.merchantReference,
      financeApplicationId,
      workflowId: application.workflowId,
    }),
    ignoredReason: 'no running workflow for this reference',
  });
}
