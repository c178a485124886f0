import { z } from 'zod';
import { isValidWebhookHash } from '../../security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../shared/finance-application';
import {
  BANK_ID_PATTERN,
  financeApplicationWorkflowId,
  legacyFinanceApplicationWorkflowId,
  parseWebhookKey,
  REFERENCE_PATTERN,
} from '../../shared/ids';
import type { AppDeps } from '../app';
import { errors, json, open, Tag, type ApiOperation, type ApiPaths } from '../openapi/describe';
import {
  parsedWith,
  WebhookAcceptedSchema,
  WebhookIgnoredSchema,
  webhookReceiver,
  type WebhookRequest,
} from '../webhook-receiver';
import type { DirectRoute } from '../direct-routes';

export { SIGNAL_DEADLINE_MS } from '../webhook-receiver';

/** The bank's finance-application webhook carries one id; anything much bigger is not the bank. */
export const FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT = 16 * 1024;

/**
 * bank-interface 6.1: the body carries financeApplicationId; other fields are ignored. The id is 1-128 visible ASCII
 * characters after trimming (README "Bounds"): anything else is a 400 and nothing is signalled.
 */
export const FinanceApplicationWebhookSchema = z
  .object({
    financeApplicationId: z
      .string()
      .trim()
      .regex(BANK_ID_PATTERN, 'must be 1 to 128 visible ASCII characters (no spaces or control characters)'),
  })
  .meta({ id: 'FinanceApplicationWebhook' });

const KIND = 'financeApplication';

const keyOf = (req: WebhookRequest): string => req.params.ref ?? '';

/**
 * The application a webhook URL names, when its hash is valid: since tenancy the key is `{merchantId}~{ref}` with
 * a tenant hash; before, the reference alone with the reference's hash. Both readings are checked (a legacy
 * reference may contain `~`); the hashes are domain-separated, so at most one matches.
 */
function applicationOf(
  req: WebhookRequest,
  secrets: readonly (string | undefined)[],
): { workflowId: string; merchantId?: string; merchantReference: string } | undefined {
  const key = keyOf(req);
  const hash = req.params.hash ?? (typeof req.query.hash === 'string' ? req.query.hash : '');
  const tenant = parseWebhookKey(key);
  const tenantValid =
    tenant !== undefined && isValidWebhookHash(secrets, tenant.merchantReference, hash, tenant.merchantId);
  const legacyValid = REFERENCE_PATTERN.test(key) && isValidWebhookHash(secrets, key, hash);
  if (tenantValid)
    return { ...tenant, workflowId: financeApplicationWorkflowId(tenant.merchantId, tenant.merchantReference) };
  if (legacyValid) return { merchantReference: key, workflowId: legacyFinanceApplicationWorkflowId(key) };
  return undefined;
}

/** The request's application, once rejectAuth accepted it. */
const verified = new WeakMap<WebhookRequest, NonNullable<ReturnType<typeof applicationOf>>>();

/**
 * `POST /webhooks/finance-applications/:ref/:hash` and `POST /webhooks/finance-applications/:ref?hash=`: the
 * bank's status-change webhook, through the receiver pipeline (src/api/webhook-receiver.ts). Authenticity: the
 * hash of the reference under WEBHOOK_HASH_SECRET or, after a rotation, WEBHOOK_HASH_SECRET_PREVIOUS (both checked
 * in constant time, no early exit); then exactly one signal to the reference's workflow. A closed or unknown
 * workflow: 200 `ignored`. The workflow, not the receiver, decides whether the financeApplicationId is its own.
 */
export function financeApplicationWebhookRoutes(deps: AppDeps): DirectRoute[] {
  const receive = webhookReceiver<z.infer<typeof FinanceApplicationWebhookSchema>>(deps, {
    kind: KIND,
    limitBytes: FINANCE_APPLICATION_WEBHOOK_BODY_LIMIT,
    rejectAuth(req) {
      // Read per request (settings may be swapped at runtime); a key we never issue cannot carry a valid hash.
      const { hashSecret, previousHashSecret } = deps.webhooks;
      const application = applicationOf(req, [hashSecret, previousHashSecret]);
      if (application) {
        verified.set(req, application);
        return undefined;
      }
      return { outcome: 'rejected_hash', message: 'Missing or wrong webhook hash' };
    },
    parse: (body) =>
      parsedWith(KIND, 'Malformed finance-application webhook body', FinanceApplicationWebhookSchema.safeParse(body)),
    async deliver({ financeApplicationId }, req) {
      const { workflowId } = verified.get(req)!;
      await deps.client.workflow
        .getHandle(workflowId)
        .signal(financeApplicationStatusChangedSignal, { financeApplicationId });
      return { workflowId };
    },
    logIds: ({ financeApplicationId }, req) => {
      const application = verified.get(req);
      return {
        merchant: application?.merchantId,
        merchantReference: application?.merchantReference,
        financeApplicationId,
        workflowId: application?.workflowId,
      };
    },
    ignoredReason: 'no running workflow for this reference',
  });

  // Described in financeApplicationWebhookPaths below.
  return [
    { path: '/webhooks/finance-applications/:ref/:hash', handler: receive },
    { path: '/webhooks/finance-applications/:ref', handler: receive },
  ];
}

const Ref = z.string().meta({ description: 'The merchant reference the webhook URL was issued for' });
const Hash = z.string().meta({ description: 'base64url(HMAC-SHA256(WEBHOOK_HASH_SECRET, ref))' });

const receiveOperation = (summary: string): ApiOperation => ({
  'x-listener': 'public',
  tags: [Tag.Webhooks],
  summary,
  description:
    'Called by the bank after each status change of the application. Authentic when the hash matches the ' +
    'reference (WEBHOOK_HASH_SECRET, or WEBHOOK_HASH_SECRET_PREVIOUS after a rotation); then one signal to the ' +
    "reference's workflow, which reads the status. Body up to 16 KiB; `application/json` or `application/*+json`, " +
    'gzip, deflate or br.',
  security: open,
  requestBody: { required: true, content: { 'application/json': { schema: FinanceApplicationWebhookSchema } } },
  responses: {
    '202': json(WebhookAcceptedSchema, 'Signalled to the workflow'),
    '200': json(WebhookIgnoredSchema, 'The workflow is closed or unknown: acknowledged, not delivered'),
    ...errors(400, [401, 'Missing or wrong webhook hash'], 413, 415, 503),
  },
});

/** OpenAPI description of this module's routes (src/api/openapi/document.ts). */
export const financeApplicationWebhookPaths: ApiPaths = {
  '/webhooks/finance-applications/{ref}/{hash}': {
    post: {
      ...receiveOperation('Finance-application status changed (hash in the path)'),
      operationId: 'receiveFinanceApplicationWebhook',
      requestParams: { path: z.object({ ref: Ref, hash: Hash }) },
    },
  },
  '/webhooks/finance-applications/{ref}': {
    post: {
      ...receiveOperation('Finance-application status changed (hash in the query)'),
      operationId: 'receiveFinanceApplicationWebhookHashQuery',
      requestParams: { path: z.object({ ref: Ref }), query: z.object({ hash: Hash }) },
    },
  },
};
