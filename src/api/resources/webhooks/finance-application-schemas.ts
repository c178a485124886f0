/**
 * The bank's finance-application webhook (src/api/routes/finance-application-webhooks.ts): its body and its OpenAPI
 * operations. Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { BANK_ID_PATTERN } from '../../../shared/ids';
import { errors, json, open, Tag, type ApiOperation, type ApiPaths } from '../../openapi/describe';
import { WebhookAcceptedSchema, WebhookIgnoredSchema } from './receiver';

/**
 * docs/bank-interface.md 6.1: the body carries financeApplicationId; other fields are ignored. The id is 1-128 visible
 * ASCII characters after trimming (docs/security.md, "Bounds"): anything else is a 400 and nothing is signalled.
 */
export const FinanceApplicationWebhookSchema = z
  .object({
    financeApplicationId: z
      .string()
      .trim()
      .regex(BANK_ID_PATTERN, 'must be 1 to 128 visible ASCII characters (no spaces or control characters)'),
  })
  .meta({ id: 'FinanceApplicationWebhook' });

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

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
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
