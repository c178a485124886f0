/**
 * Merchant callbacks not delivered, through each merchant's ledger workflow, and the bulk resend of a time range
 * (docs/decisions/0049-undelivered-callbacks-ledger.md). Every read and start is scoped: the ledger and the resend
 * are the merchant's own by their workflow ids.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { quoteLiteral } from '../shared/application-search';
import { MerchantId } from '../shared/search-attributes';
import {
  bulkResendProgressQuery,
  callbackBulkResendWorkflowId,
  callbackBulkResendWorkflowType,
  callbackLedgerWorkflowId,
  callbackLedgerWorkflowType,
  callbackReportSignal,
  undeliveredCallbacksQuery,
  type BulkResendInput,
  type BulkResendProgress,
  type BulkResendRange,
  type CallbackLedgerInput,
  type CallbackReport,
  type UndeliveredPage,
  type UndeliveredPageRequest,
} from '../shared/undelivered-callbacks';
import { merchantScope, type MerchantScope } from './merchant-scope';

/** The worker's access to the ledgers (ActivityDeps.callbackLedger): a report starts the merchant's when none runs. */
export function callbackLedgerAccess(client: Client, taskQueue: string) {
  return {
    async report(merchantId: string, report: CallbackReport): Promise<void> {
      const { merchantId: id } = merchantScope(merchantId || 'unknown');
      const input: CallbackLedgerInput = { merchantId: id };
      await client.workflow.signalWithStart(callbackLedgerWorkflowType, {
        workflowId: callbackLedgerWorkflowId(id),
        taskQueue,
        args: [input],
        signal: callbackReportSignal,
        signalArgs: [report],
        typedSearchAttributes: [{ key: MerchantId, value: id }],
        staticSummary: `Undelivered callbacks of merchant ${id}`,
      });
    },
    read: (merchantId: string, request: UndeliveredPageRequest) =>
      listUndeliveredCallbacks(client, merchantId, request),
  };
}

/** A page of the merchant's undelivered callbacks (none when its ledger never started). */
export async function listUndeliveredCallbacks(
  client: Client,
  merchant: MerchantScope | string,
  request: UndeliveredPageRequest,
): Promise<UndeliveredPage> {
  const { merchantId } = merchantScope(merchant);
  try {
    return await client.workflow
      .getHandle(callbackLedgerWorkflowId(merchantId))
      .query(undeliveredCallbacksQuery, request);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { callbacks: [], dropped: 0 };
    throw err;
  }
}

/** Another range's bulk resend of the merchant is running: one at a time, so its pace is the merchant's. */
export class BulkResendRunningError extends Error {
  constructor(readonly running: string) {
    super('Another bulk resend of this merchant is running: wait for it to end');
    this.name = 'BulkResendRunningError';
  }
}

/**
 * Starts the merchant's bulk resend of a range, or joins the one of the same range that runs; a later request of the
 * range runs again (it finds only what is still given up). Throws BulkResendRunningError while another range's runs.
 */
export async function startBulkResend(
  client: Client,
  merchant: MerchantScope | string,
  range: BulkResendRange,
  options: { taskQueue: string; perMinute: number },
): Promise<{ workflowId: string }> {
  const { merchantId } = merchantScope(merchant);
  const workflowId = callbackBulkResendWorkflowId(merchantId, range);
  for await (const execution of client.workflow.list({
    query:
      `WorkflowType = ${quoteLiteral(callbackBulkResendWorkflowType)} AND MerchantId = ${quoteLiteral(merchantId)} ` +
      `AND ExecutionStatus = 'Running'`,
    pageSize: 5,
  })) {
    if (execution.workflowId !== workflowId) throw new BulkResendRunningError(execution.workflowId);
  }
  const input: BulkResendInput = { merchantId, ...range, perMinute: options.perMinute };
  try {
    await client.workflow.start(callbackBulkResendWorkflowType, {
      workflowId,
      taskQueue: options.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [{ key: MerchantId, value: merchantId }],
      staticSummary: `Bulk resend of merchant ${merchantId}'s given-up callbacks`,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  return { workflowId };
}

/** The progress of the merchant's bulk resend of a range; undefined when none was asked. */
export async function readBulkResend(
  client: Client,
  merchant: MerchantScope | string,
  range: BulkResendRange,
): Promise<BulkResendProgress | undefined> {
  const { merchantId } = merchantScope(merchant);
  const handle = client.workflow.getHandle(callbackBulkResendWorkflowId(merchantId, range));
  try {
    const { status } = await handle.describe();
    if (status.name === 'COMPLETED') return (await handle.result()) as BulkResendProgress;
    return await handle.query(bulkResendProgressQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}
