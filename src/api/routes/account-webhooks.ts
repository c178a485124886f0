import { Router } from 'express';
import { WorkflowNotFoundError } from '@temporalio/client';
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
import { HttpError, isTemporalUnavailable } from '../errors';
import { BodyTooLargeError, hasJsonContentType, readJsonBody, sendJson } from '../json-body';

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

type Kind = 'accountEvent' | 'transactionEvent' | 'unknown';

/**
 * `POST /webhooks/accounts`: the bank's accountEvent and transactionEvent (bank-interface 6.2). Checks, in order:
 * Authorization (401), content type (415), size (413), JSON and shape (400); then exactly one Temporal call.
 * - accountEvent (the body carries `taskId`) → signal to the consent's refresh workflow; no running refresh → 200
 *   `ignored` (logged, counted), so the bank stops retrying an event nobody waits for.
 * - transactionEvent → signal-with-start of the consent's transactionEventsWorkflow (durable hand-off).
 * 202 only after Temporal accepted the signal; 503 when Temporal cannot take it, so the bank retries.
 */
export function accountWebhookRoutes(deps: AppDeps): Router {
  const router = Router();
  const count = (kind: Kind, outcome: string) => deps.metrics.webhooks.inc({ kind, outcome });

  router.post('/webhooks/accounts', async (req, res) => {
    // Read per request: the settings may be swapped at runtime (the test stack does). Node trims header values,
    // so the configured value is compared trimmed; empty means the bank sends no header and none is checked.
    const expected = deps.webhooks.securityHeader.trim();
    if (expected !== '' && !safeEqual(req.headers.authorization ?? '', expected)) {
      count('unknown', 'rejected_auth');
      throw new HttpError(401, 'Missing or wrong Authorization header');
    }
    if (!hasJsonContentType(req, false)) {
      count('unknown', 'rejected_content_type');
      throw new HttpError(415, 'Content-Type must be application/json');
    }
    let body: unknown;
    try {
      body = await readJsonBody(req, ACCOUNT_WEBHOOK_BODY_LIMIT);
    } catch (err) {
      count('unknown', err instanceof BodyTooLargeError ? 'too_large' : 'rejected_body');
      throw err;
    }
    const isAccountEvent = typeof body === 'object' && body !== null && 'taskId' in body;
    const kind: Kind = isAccountEvent ? 'accountEvent' : 'transactionEvent';
    const parsed = (isAccountEvent ? AccountEventSchema : TransactionEventSchema).safeParse(body);
    if (!parsed.success) {
      count(kind, 'rejected_body');
      throw new HttpError(
        400,
        `Malformed ${kind} body`,
        parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      );
    }

    try {
      if (isAccountEvent) {
        const event = parsed.data as z.infer<typeof AccountEventSchema>;
        const workflowId = consentRefreshWorkflowId(event.consentId);
        try {
          await deps.client.workflow.getHandle(workflowId).signal(accountEventSignal, event);
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
          count(kind, 'no_target');
          deps.logger.warn(
            { consentId: event.consentId, taskId: event.taskId, bankCode: event.bankCode, workflowId },
            'accountEvent for a consent with no running refresh: acknowledged, not delivered',
          );
          sendJson(res, 200, { status: 'ignored', kind, reason: 'no running refresh for this consent' });
          return;
        }
        count(kind, 'accepted');
        deps.logger.debug(
          { consentId: event.consentId, taskId: event.taskId, bankCode: event.bankCode, workflowId },
          'accountEvent signalled',
        );
        sendJson(res, 202, { status: 'accepted', kind, workflowId });
        return;
      }

      const event = parsed.data as z.infer<typeof TransactionEventSchema>;
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
      count(kind, 'accepted');
      deps.logger.debug(
        { consentId: event.consentId, accounts: event.accounts.length, workflowId },
        'transactionEvent handed off',
      );
      sendJson(res, 202, { status: 'accepted', kind, workflowId });
    } catch (err) {
      count(kind, isTemporalUnavailable(err) ? 'unavailable' : 'error');
      throw err;
    }
  });

  return router;
}
