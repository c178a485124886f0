import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { quoteLiteral } from '../shared/application-search';
import { consentClaimWorkflowType } from '../shared/consent-claim';
import { financeApplicationWorkflowType } from '../shared/finance-application';
import { financeApplicationWorkflowId } from '../shared/ids';
import { legacyWorkflowIdOf, merchantScope, type MerchantScope } from './merchant-scope';

/**
 * What a merchant holds in Temporal, counted there rather than in one process's memory, so that every API process
 * sees the same totals (the merchant budgets `maxOpenApplications` and `maxConsents`, src/api/budgets.ts). One
 * visibility count each: eventually consistent, a start shows after a moment.
 */

/** The things a merchant holds that are counted. */
export type MerchantTotal = 'open_applications' | 'consents';

/** The visibility query of what the merchant holds open now (running workflows of the kind, with its MerchantId). */
export function merchantTotalQuery(total: MerchantTotal, merchant: MerchantScope | string): string {
  const { merchantId, ownsLegacy } = merchantScope(merchant);
  const own = `MerchantId = ${quoteLiteral(merchantId)}`;
  if (total === 'consents')
    return `WorkflowType = ${quoteLiteral(consentClaimWorkflowType)} AND ${own} AND ExecutionStatus = 'Running'`;
  // The legacy merchant's also those started before tenancy (no MerchantId), as its lists show them.
  const whose = ownsLegacy ? `(${own} OR MerchantId IS NULL)` : own;
  return `WorkflowType = ${quoteLiteral(financeApplicationWorkflowType)} AND ${whose} AND ExecutionStatus = 'Running'`;
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
  const scope = merchantScope(merchant);
  const ids = [
    financeApplicationWorkflowId(scope.merchantId, merchantReference),
    legacyWorkflowIdOf(scope, merchantReference),
  ];
  for (const workflowId of ids) {
    if (workflowId === undefined) continue;
    try {
      const { status } = await client.workflow.getHandle(workflowId).describe();
      if (status.name === 'RUNNING' || status.name === 'COMPLETED') return true;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return false;
}
