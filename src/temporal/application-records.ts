import { quoteLiteral } from '../shared/application-search';
import { FinanceApplicationId } from '../shared/search-attributes';

/** What the records need of a connection: its WorkflowService (a NativeConnection's or a Client's). */
export interface VisibilityService {
  listWorkflowExecutions(request: { namespace: string; query: string; pageSize?: number }): Promise<{
    executions?: { execution?: { workflowId?: string | null } | null }[] | null;
  }>;
}

/**
 * This service's own record of the bank's applications: each finance application workflow sets its bank id as the
 * `FinanceApplicationId` search attribute once created. The bank cannot say whose an
 * application is (every merchant's goes through one client), so this is how a confirmation read tells a duplicate
 * of a reference from another application of the service, another merchant's or another reference's.
 */
export interface ApplicationRecords {
  /**
   * The ids of the workflows that record `financeApplicationId` as their own (visibility is eventually consistent: an
   * application created a moment ago may be missing). Throws RangeError for an id no query may quote.
   */
  workflowsRecording(financeApplicationId: string): Promise<string[]>;
}

export function applicationRecords(service: VisibilityService, namespace: string): ApplicationRecords {
  return {
    async workflowsRecording(financeApplicationId) {
      const query = `${FinanceApplicationId.name} = ${quoteLiteral(financeApplicationId)}`;
      // A few are enough: one other workflow already decides.
      const page = await service.listWorkflowExecutions({ namespace, query, pageSize: 10 });
      return [...new Set((page.executions ?? []).flatMap((e) => e.execution?.workflowId ?? []))];
    },
  };
}
