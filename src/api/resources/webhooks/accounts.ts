import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import { safeEqual } from '../../../security/webhook-hash';
import type { AccountEventBody } from '../../../shared/bank-wire';
import {
  accountEventSignal,
  lateAccountEventSignal,
  lateAccountEventsWorkflowType,
  type LateAccountEventSignalInput,
  type LateReportReason,
} from '../../../shared/consent-refresh';
import {
  MAX_ACCOUNTS_PER_BATCH,
  transactionEventSignal,
  transactionEventsWorkflowType,
  type TransactionEventSignalInput,
} from '../../../shared/transaction-events';
import { DEFAULT_SERVICE_SETTINGS } from '../../../shared/application-settings';
import {
  consentRefreshWorkflowId,
  lateAccountEventsWorkflowId,
  transactionEventsWorkflowId,
} from '../../../shared/ids';
import { ConsentId, MerchantId, RefreshTaskId } from '../../../shared/search-attributes';
import { ConsentOwners } from '../../../client/consent-claims';
import type { lateAccountEventsWorkflow } from '../../../workflows/late-account-events/workflow';
import type { transactionEventsWorkflow } from '../../../workflows/transaction-events/workflow';
import type { WebhookSecrets } from '../../../config';
import type { MerchantDirectory } from '../../../config/merchants';
import type { ServiceSettings } from '../../../shared/application-settings';
import {
  parsedWith,
  WebhookIgnored,
  webhookReceiver,
  type ParsedWebhook,
  type WebhookHandler,
  type WebhookReceiverDeps,
} from './receiver';
import { AccountEventSchema, TransactionEventSchema } from './schemas';

export interface AccountWebhookDeps extends WebhookReceiverDeps {
  client: Client;
  taskQueue: string;
  /** WEBHOOK_SECURITY_HEADER; read per request. */
  webhooks: Pick<WebhookSecrets, 'securityHeader'>;
  /** Each consent owner's transactionEvents callback. */
  merchants: Pick<MerchantDirectory, 'resolve'>;
  /** The transactionEvents coalescing window; absent: the built-in default. */
  settings?: ServiceSettings;
}

/** Account webhook bodies are small (one bank's accounts); anything much bigger is not the bank. */
export const ACCOUNT_WEBHOOK_BODY_LIMIT = 256 * 1024;

type AccountWebhook =
  | { kind: 'accountEvent'; event: z.infer<typeof AccountEventSchema> }
  | { kind: 'transactionEvent'; event: z.infer<typeof TransactionEventSchema> };

/**
 * A body with `taskId` is an accountEvent, any other a transactionEvent: the bank's document does not say
 * (docs/bank-interface.md 6.2, docs/decisions/0010-account-or-transaction-event.md).
 */
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
 * Where an accountEvent goes: to the consent's refresh when it is running and its task is this event's (or not
 * known yet: PUT /refresh has not answered, the event is kept and matched there); otherwise it is a late bank report
 * and goes to the consent's lateAccountEventsWorkflow by signal-with-start. One describe() per accountEvent (one
 * per bank per refresh: rare) reads the running refresh's RefreshTaskId. A refresh that closes between the describe
 * and the signal answers WorkflowNotFoundError: the event is then late too. Anything the refresh still cannot
 * take (an early event of another task) it hands to the late workflow itself.
 */
async function deliverAccountEvent(
  deps: AccountWebhookDeps,
  owners: ConsentOwners,
  event: AccountEventBody,
): Promise<{ workflowId: string; outcome?: string }> {
  const refreshWorkflowId = consentRefreshWorkflowId(event.consentId);
  const refresh = deps.client.workflow.getHandle(refreshWorkflowId);
  let reason: LateReportReason | 'signalled';
  try {
    const description = await refresh.describe();
    const runningTaskId = description.typedSearchAttributes.get(RefreshTaskId);
    if (description.status.name !== 'RUNNING') reason = 'refresh-closed';
    else if (runningTaskId !== undefined && runningTaskId !== event.taskId) reason = 'other-task';
    else reason = await signalRefresh(refresh, event);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    reason = 'no-refresh';
  }
  if (reason === 'signalled') return { workflowId: refreshWorkflowId };
  // A late report starts a workflow: only for a consent a merchant claimed, and then for that merchant.
  const merchantId = await ownerOrIgnore(owners, event.consentId);
  return { workflowId: await handOffLateReport(deps, merchantId, { event, reason }), outcome: 'late' };
}

/** The consent's owner; an unclaimed consent's webhook starts nothing (200 ignored, counted `unclaimed`, logged). */
async function ownerOrIgnore(owners: ConsentOwners, consentId: string): Promise<string> {
  const merchantId = await owners.of(consentId);
  if (merchantId === undefined) throw new WebhookIgnored('unclaimed', 'no merchant has claimed this consent');
  return merchantId;
}

/** The refresh's own event: signalled; 'refresh-closed' when it closed since the describe. */
async function signalRefresh(
  refresh: WorkflowHandle,
  event: AccountEventBody,
): Promise<'signalled' | 'refresh-closed'> {
  try {
    await refresh.signal(accountEventSignal, event);
    return 'signalled';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'refresh-closed';
    throw err;
  }
}

/** Signal-with-start of the consent's late-bank-reports workflow (durable: it keeps and delivers the report). */
async function handOffLateReport(
  deps: AccountWebhookDeps,
  merchantId: string,
  report: LateAccountEventSignalInput,
): Promise<string> {
  const { consentId } = report.event;
  // The owner's own late workflow: a previous owner's, still open, gets nothing more (src/shared/ids.ts).
  const workflowId = lateAccountEventsWorkflowId(merchantId, consentId);
  await deps.client.workflow.signalWithStart<typeof lateAccountEventsWorkflow, [LateAccountEventSignalInput]>(
    lateAccountEventsWorkflowType,
    {
      workflowId,
      taskQueue: deps.taskQueue,
      args: [{ merchantId, consentId, callbackUrl: deps.merchants.resolve(merchantId).transactionsCallbackUrl }],
      signal: lateAccountEventSignal,
      signalArgs: [report],
      typedSearchAttributes: [
        { key: MerchantId, value: merchantId },
        { key: ConsentId, value: consentId },
      ],
      staticSummary: `Late bank reports of consent ${consentId}`,
    },
  );
  deps.logger.info(
    { consentId, taskId: report.event.taskId, bankCode: report.event.bankCode, reason: report.reason, workflowId },
    'accountEvent handed off as a late bank report',
  );
  return workflowId;
}

/**
 * A transactionEvent → signal-with-start of the consent's transactionEventsWorkflow (durable hand-off), in parts of at
 * most MAX_ACCOUNTS_PER_BATCH accounts, one after the other: each signal stays small, and each part starts the
 * workflow again if it closed meanwhile. A failure midway is a 503: the bank sends the whole event again, and the
 * accounts already signalled come twice (the merchant's callback carries a set of changed accounts: harmless).
 */
async function deliverTransactionEvent(
  deps: AccountWebhookDeps,
  owners: ConsentOwners,
  event: TransactionEventSignalInput,
): Promise<{ workflowId: string; outcome?: string }> {
  // Only for a consent a merchant claimed, and then for that merchant.
  const merchantId = await ownerOrIgnore(owners, event.consentId);
  // The owner's own workflow: a previous owner's, still open, gets nothing more (src/shared/ids.ts).
  const workflowId = transactionEventsWorkflowId(merchantId, event.consentId);
  for (let from = 0; from < event.accounts.length; from += MAX_ACCOUNTS_PER_BATCH) {
    const part = { ...event, accounts: event.accounts.slice(from, from + MAX_ACCOUNTS_PER_BATCH) };
    await deps.client.workflow.signalWithStart<typeof transactionEventsWorkflow, [TransactionEventSignalInput]>(
      transactionEventsWorkflowType,
      {
        workflowId,
        taskQueue: deps.taskQueue,
        args: [
          {
            merchantId,
            consentId: event.consentId,
            callbackUrl: deps.merchants.resolve(merchantId).transactionsCallbackUrl,
            // TRANSACTION_EVENTS_WINDOW: taken by the run this signal starts (a running one keeps its own).
            coalesceWindow: (deps.settings ?? DEFAULT_SERVICE_SETTINGS).transactionEvents.coalesceWindowMs,
          },
        ],
        signal: transactionEventSignal,
        signalArgs: [part],
        typedSearchAttributes: [
          { key: MerchantId, value: merchantId },
          { key: ConsentId, value: event.consentId },
        ],
        staticSummary: `transactionEvents of consent ${event.consentId}`,
      },
    );
  }
  return { workflowId };
}

/**
 * `POST /webhooks/accounts`: the bank's accountEvent and transactionEvent (docs/bank-interface.md 6.2), through the
 * receiver pipeline (receiver.ts). Authenticity: `Authorization` equal to WEBHOOK_SECURITY_HEADER
 * in constant time (an empty setting expects none: the embedded stack, or WEBHOOK_SECURITY_HEADER_WAIVED=true).
 * - accountEvent → signal to the consent's running refresh of its task, else a late bank report (deliverAccountEvent):
 *   202 either way, counted `accepted` or `late`; never `ignored`.
 * - transactionEvent → signal-with-start of the consent's transactionEventsWorkflow (durable hand-off).
 */
export function accountWebhook(deps: AccountWebhookDeps): WebhookHandler {
  // Shared with this process's facade: a release through it is seen here at once.
  const owners = ConsentOwners.forClient(deps.client);
  return webhookReceiver<AccountWebhook>(deps, {
    kind: 'unknown',
    limitBytes: ACCOUNT_WEBHOOK_BODY_LIMIT,
    authenticate(req) {
      // Read per request: the settings may be swapped at runtime (the test stack does). Node trims header values,
      // so the configured value is compared trimmed; empty means the bank sends no header and none is checked.
      const expected = deps.webhooks.securityHeader.trim();
      if (expected === '' || safeEqual(req.headers.authorization ?? '', expected))
        return { ok: true, caller: undefined };
      return { ok: false, outcome: 'rejected_auth', message: 'Missing or wrong Authorization header' };
    },
    parse: parseAccountWebhook,
    async deliver(webhook) {
      if (webhook.kind === 'accountEvent') return deliverAccountEvent(deps, owners, webhook.event);
      return deliverTransactionEvent(deps, owners, webhook.event);
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
            signals: Math.ceil(webhook.event.accounts.length / MAX_ACCOUNTS_PER_BATCH),
          },
    // Never used: an accountEvent is a late report when its refresh cannot take it, a transactionEvent starts its workflow.
    ignoredReason: 'no workflow for this consent',
  });
}
