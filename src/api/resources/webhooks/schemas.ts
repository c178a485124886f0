/**
 * The bank's account webhook (src/api/routes/account-webhooks.ts): its bodies and its OpenAPI operation. Imported by
 * the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { MAX_ACCOUNTS_PER_BATCH } from '../../../shared/transaction-events';
import { BANK_CODE_PATTERN, BANK_ID_PATTERN, NO_CONTROL_CHARACTERS, REFERENCE_PATTERN } from '../../../shared/ids';
import { errors, json, Tag, WEBHOOK_SECURITY_HEADER, type ApiPaths } from '../../openapi/describe';
import { WebhookAcceptedSchema, WebhookIgnoredSchema } from './receiver';

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

/** The route's OpenAPI operation (gathered by src/api/openapi/document.ts). */
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
