import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { quoteLiteral } from '../shared/application-search';
import { consentClaimWorkflowType } from '../shared/consent-claim';
import { financeApplicationWorkflowType } from '../shared/finance-application';
import { financeApplicationWorkflowId } from '../shared/ids';
import { merchantScope, type MerchantScope } from './merchant-scope';

/**
 * What a merchant holds in Temporal, counted there rather than in one process's memory, so that every API process
 * sees the same totals (the merchant budgets `maxOpenApplications` and `maxConsents`, src/api/budgets.ts). One
 * visibility count each: eventually consistent, a start shows after a moment.
 */

/** The things a merchant holds that are counted. */
export type MerchantTotal = 'open_applications' | 'consents';

/** The visibility query of what the merchant holds open now (running workflows of the kind, with its MerchantId). */
export function merchantTotalQuery(total: MerchantTotal, merchant: MerchantScope | string): string {
  const own = `MerchantId = ${quoteLiteral(merchantScope(merchant).merchantId)}`;
  const type = total === 'consents' ? consentClaimWorkflowType : financeApplicationWorkflowType;
  return `WorkflowType = ${quoteLiteral(type)} AND ${own} AND ExecutionStatus = 'Running'`;
}

/** How many the merchant holds now, by Temporal's visibility store. */
export async function countMerchantTotal(
  client: Client,
  total: MerchantTotal,
  merchant: MerchantScope | string,
): Promise<number> {
  const { count } = await client.workflow.count(merchantTotalQuery(total, merchant));
  return count;
}

/**
 * True when starting this reference again would start nothing new: its application is running or completed (a
 * start then answers that application). A failed, terminated or timed-out run may be started again, so false.
 */
export async function applicationExists(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<boolean> {
  const workflowId = financeApplicationWorkflowId(merchantScope(merchant).merchantId, merchantReference);
  try {
    const { status } = await client.workflow.getHandle(workflowId).describe();
    return status.name === 'RUNNING' || status.name === 'COMPLETED';
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    return false;
  }
}
