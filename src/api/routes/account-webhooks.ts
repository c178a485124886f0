import { Router } from 'express';
import { z } from 'zod';
import { safeEqual } from '../../security/webhook-hash';
import {
  accountEventSignal,
  transactionEventSignal,
  type TransactionEventSignalInput,
} from '../../shared/consent-refresh';
import { consentRefreshWorkflowId, transactionEventsWorkflowId } from '../../shared/ids';
import { ConsentId } from '../../shared/search-attributes';
import type { transactionEventsWorkflow } from '../../workflows/transaction-events';
import type { AppDeps } from '../app';
import { parsedWith, webhookReceiver, type ParsedWebhook } from '../webhook-receiver';

/** Account webhook bodies are small (one bank's accounts); anything much bigger is not the bank. */
export const ACCOUNT_WEBHOOK_BODY_LIMIT = 256 * 1024;

const id = z.string().trim().min(1).max(256);

/** bank-interface 6.2 accountEvent; unknown fields are dropped, item eventType is any string. */
export const AccountEventSchema = z.object({
  consentId: id,
  taskId: id,
  taskStatus: z.string().min(1).max(64),
  bankCode: z.string().min(1).max(64),
  bankName: z.string().max(256),
  accounts: z.array(z.object({ accountId: id, eventType: z.string().min(1).max(64) })).max(1000),
});

/** bank-interface 6.2 transactionEvent; eventType defaults to NEW ("the default on every occasion"). */
export const TransactionEventSchema = z.object({
  consentId: id,
  eventType: z.string().min(1).max(64).default('NEW'),
  accounts: z
    .array(z.object({ accountId: id }))
    .min(1)
    .max(1000),
});

type AccountWebhook =
  | { kind: 'accountEvent'; event: z.infer<typeof AccountEventSchema> }
  | { kind: 'transactionEvent'; event: z.infer<typeof TransactionEventSchema> };

/** A body with `taskId` is an accountEvent, any other a transactionEvent (bank-interface 6.2 does not say). */
function parseAccountWebhook(body: unknown): ParsedWebhook<AccountWebhook> {
  if (typeof body === 'object' && body !== null && 'taskId' in body) {
    const parsed = parsedWith('accountEvent', 'Malformed accountEvent body', AccountEventSchema.safeParse(body));
    return parsed.ok ? { ...parsed, event: { kind: 'accountEvent', event: parsed.event } } : parsed;
  }
  const parsed = parsedWith(
    'transactionEvent',
    'Malformed transactionEvent body',
    TransactionEventSchema.safeParse(body),
  );
  return parsed.ok ? { ...parsed, event: { kind: 'transactionEvent', event: parsed.event } } : parsed;
}

/**
 * `POST /webhooks/accounts`: the bank's accountEvent and transactionEvent (bank-interface 6.2), through the
 * receiver pipeline (src/api/webhook-receiver.ts). Authenticity: `Authorization` equal to WEBHOOK_SECURITY_HEADER
 * in constant time (an empty setting expects none: the embedded stack, or WEBHOOK_SECURITY_HEADER_WAIVED=true).
 * - accountEvent → signal to the consent's refresh workflow; no running refresh → 200 `ignored`.
 * - transactionEvent → signal-with-start of the consent's transactionEventsWorkflow (durable hand-off).
 */
export function accountWebhookRoutes(deps: AppDeps): Router {
  const router = Router();

  router.post(
    '/webhooks/accounts',
    webhookReceiver<AccountWebhook>(deps, {
      kind: 'unknown',
      limitBytes: ACCOUNT_WEBHOOK_BODY_LIMIT,
      rejectAuth(req) {
        // Read per request: the settings may be swapped at runtime (the test stack does). Node trims header values,
        // so the configured value is compared trimmed; empty means the bank sends no header and none is checked.
        const expected = deps.webhooks.securityHeader.trim();
        if (expected === '' || safeEqual(req.headers.authorization ?? '', expected)) return undefined;
        return { outcome: 'rejected_auth', message: 'Missing or wrong Authorization header' };
      },
      parse: parseAccountWebhook,
      async deliver(webhook) {
        if (webhook.kind === 'accountEvent') {
          const workflowId = consentRefreshWorkflowId(webhook.event.consentId);
          await deps.client.workflow.getHandle(workflowId).signal(accountEventSignal, webhook.event);
          return { workflowId };
        }
        const event = webhook.event;
        const workflowId = transactionEventsWorkflowId(event.consentId);
        await deps.client.workflow.signalWithStart<typeof transactionEventsWorkflow, [TransactionEventSignalInput]>(
          'transactionEventsWorkflow',
          {
            workflowId,
            taskQueue: deps.taskQueue,
            args: [{ consentId: event.consentId, callbackUrl: deps.transactionsCallbackUrl }],
            signal: transactionEventSignal,
            signalArgs: [event],
            typedSearchAttributes: [{ key: ConsentId, value: event.consentId }],
            staticSummary: `transactionEvents of consent ${event.consentId}`,
          },
        );
        return { workflowId };
      },
      logIds: (webhook) =>
        webhook.kind === 'accountEvent'
          ? {
              consentId: webhook.event.consentId,
              taskId: webhook.event.taskId,
              bankCode: webhook.event.bankCode,
              workflowId: consentRefreshWorkflowId(webhook.event.consentId),
            }
          : {
              consentId: webhook.event.consentId,
              accounts: webhook.event.accounts.length,
              workflowId: transactionEventsWorkflowId(webhook.event.consentId),
            },
      ignoredReason: 'no running refresh for this consent',
    }),
  );

  return router;
}
