/**
 * The bank's webhooks (docs/bank-interface.md 6): their bodies, the receiver's answers and the OpenAPI operations.
 * Imported by the receiver pipeline and the handlers beside it, and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { MAX_ACCOUNTS_PER_BATCH } from '../../../shared/transaction-events';
import { BANK_CODE_PATTERN, BANK_ID_PATTERN, NO_CONTROL_CHARACTERS, REFERENCE_PATTERN } from '../../../shared/ids';
import {
  errors,
  json,
  open,
  Tag,
  WEBHOOK_SECURITY_HEADER,
  type ApiOperation,
  type ApiPaths,
} from '../../openapi/describe';

/** 202: Temporal accepted the signal (or the signal-with-start). */
export const WebhookAcceptedSchema = z
  .object({ status: z.literal('accepted'), kind: z.string(), workflowId: z.string() })
  .meta({ id: 'WebhookAccepted' });

/** 200: the target workflow is closed or unknown; acknowledged so the bank does not retry, not delivered. */
export const WebhookIgnoredSchema = z
  .object({ status: z.literal('ignored'), kind: z.string(), reason: z.string() })
  .meta({ id: 'WebhookIgnored' });

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

/** The finance webhook's OpenAPI operations (gathered by src/api/openapi/document.ts). */
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

/**
 * Bounds of what the bank sends (docs/security.md, "Bounds"): ids are 1-128 visible ASCII characters (after trimming), the
 * consentId a reference ([A-Za-z0-9._~-]{1,128}: it becomes part of workflow ids), free text has no control
 * characters. Anything else is a 400 naming the field, and nothing is signalled or started.
 */
const id = z
  .string()
  .trim()
  .regex(BANK_ID_PATTERN, 'must be 1 to 128 visible ASCII characters (no spaces or control characters)');
const consentId = z
  .string()
  .trim()
  .regex(REFERENCE_PATTERN, 'must match [A-Za-z0-9._~-]{1,128} (it becomes part of workflow ids)');
const text = (max: number) => z.string().max(max).regex(NO_CONTROL_CHARACTERS, 'must not contain control characters');

/** docs/bank-interface.md 6.2 accountEvent; unknown fields are dropped, item eventType is any string. */
export const AccountEventSchema = z
  .object({
    consentId,
    taskId: id,
    taskStatus: text(64).min(1),
    bankCode: z.string().regex(BANK_CODE_PATTERN, 'must be 1 to 64 visible ASCII characters'),
    bankName: text(256),
    // One bank's accounts: 1,000 is far beyond any consent; more is a 400 (one signal stays far under 2 MB).
    accounts: z.array(z.object({ accountId: id, eventType: text(64).min(1) })).max(MAX_ACCOUNTS_PER_BATCH),
  })
  .meta({ id: 'AccountEvent' });

/**
 * docs/bank-interface.md 6.2 transactionEvent; eventType defaults to NEW ("the default on every occasion"). Any number
 * of accounts the body limit lets through; the receiver signals them in parts of at most MAX_ACCOUNTS_PER_BATCH.
 */
export const TransactionEventSchema = z
  .object({
    consentId,
    eventType: text(64).min(1).default('NEW'),
    accounts: z.array(z.object({ accountId: id })).min(1),
  })
  .meta({ id: 'TransactionEvent' });

/** The account webhook's OpenAPI operation (gathered by src/api/openapi/document.ts). */
export const accountWebhookPaths: ApiPaths = {
  '/webhooks/accounts': {
    post: {
      'x-listener': 'public',
      operationId: 'receiveAccountWebhook',
      tags: [Tag.Webhooks],
      summary: "The bank's accountEvent or transactionEvent",
      description:
        "A body with `taskId` is an accountEvent: signalled to the consent's running refresh of that task, else " +
        'handed off as a late bank report (202 either way). Any other body is a transactionEvent: signal-with-start ' +
        "of the consent's transactionEventsWorkflow, in signals of at most 1,000 accounts. `Authorization` must " +
        'equal WEBHOOK_SECURITY_HEADER (none is checked when it is empty). Body up to 256 KiB; ids of 1 to 128 ' +
        'visible ASCII characters, consentId [A-Za-z0-9._~-]{1,128}, no control characters anywhere (else 400).',
      security: [{ [WEBHOOK_SECURITY_HEADER]: [] }],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: z.union([AccountEventSchema, TransactionEventSchema]) } },
      },
      responses: {
        '202': json(WebhookAcceptedSchema, 'Signalled (or handed off as a late report)'),
        '200': json(WebhookIgnoredSchema, 'No workflow could take it: acknowledged, not delivered'),
        ...errors(400, [401, 'Missing or wrong Authorization header'], 413, 415, 503),
      },
    },
  },
};
