/**
 * Reading one finance application: where it is (the merchant's own workflow id), its state as merchants get it, its
 * result. finance-applications.ts re-exports it and the
 * status waits (status-waits.ts) build on it, so neither imports the other.
 */
import { type Client, type WorkflowExecutionDescription, type WorkflowHandle } from '@temporalio/client';
import {
  financeApplicationStateQuery,
  initialFinanceApplicationState,
  type FinanceApplicationState,
} from '../shared/finance-application';
import { financeApplicationWorkflowId } from '../shared/ids';
import { FinanceApplicationId } from '../shared/search-attributes';
import { applicationPhase, type ApplicationPhase } from '../shared/application-phase';
import { merchantScope, type MerchantScope } from './merchant-scope';
import type { financeApplicationWorkflow } from '../workflows/finance-application/workflow';

/** The workflow id of the merchant's application with this reference (one describe); WorkflowNotFoundError if none. */
export async function resolveFinanceApplicationId(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<string> {
  return (await describeFinanceApplication(client, merchant, merchantReference)).workflowId;
}

/** The found workflow id and its run's status (one describe). */
async function describeFinanceApplication(client: Client, merchant: MerchantScope | string, merchantReference: string) {
  const own = financeApplicationWorkflowId(merchantScope(merchant).merchantId, merchantReference);
  const description = await client.workflow.getHandle(own).describe();
  return { workflowId: own, status: description.status, description };
}

/** The merchant's application with this reference (latest run). */
export function financeApplicationHandle(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): WorkflowHandle<typeof financeApplicationWorkflow> {
  return client.workflow.getHandle<typeof financeApplicationWorkflow>(
    financeApplicationWorkflowId(merchantScope(merchant).merchantId, merchantReference),
  );
}

/**
 * Current status, history and counters of the merchant's application with this reference. A completed workflow
 * answers from its result (no worker needed); a running one through the query. Throws WorkflowNotFoundError for a
 * reference the merchant does not have (another merchant's included: nothing tells that it exists).
 */
export async function getFinanceApplication(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<FinanceApplicationState> {
  return (await readFinanceApplication(client, merchant, merchantReference)).state;
}

/**
 * The merchant's application with its phase (src/shared/application-phase.ts): what GET /applications/:ref answers.
 * Throws WorkflowNotFoundError as getFinanceApplication.
 */
export async function getFinanceApplicationView(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<{ state: FinanceApplicationState; phase: ApplicationPhase }> {
  const { state, phase } = await readFinanceApplication(client, merchant, merchantReference);
  return { state, phase };
}

/** The phase of an application whose state was read already (after a status wait): one describe for its run. */
export async function phaseOf(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
  state: FinanceApplicationState,
): Promise<ApplicationPhase> {
  const { status } = await describeFinanceApplication(client, merchant, merchantReference);
  return applicationPhase({ runOpen: status.name === 'RUNNING', followingEnded: state.done });
}

/**
 * The application's state, its phase, the workflow id it was found under, and the run's description (its pending
 * activities: the console's callback in flight).
 */
export async function readFinanceApplication(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<{
  workflowId: string;
  state: FinanceApplicationState;
  phase: ApplicationPhase;
  description: WorkflowExecutionDescription;
}> {
  const { workflowId, status, description } = await describeFinanceApplication(client, merchant, merchantReference);
  const handle = client.workflow.getHandle<typeof financeApplicationWorkflow>(workflowId);
  const state =
    status.name === 'COMPLETED'
      ? await handle.result()
      : ((status.name === 'FAILED' ? neverCreated(description, merchantReference) : undefined) ??
        (await handle.query(financeApplicationStateQuery)));
  const phase = applicationPhase({ runOpen: status.name === 'RUNNING', followingEnded: state.done });
  return { workflowId, state, phase, description };
}

/**
 * The state of a run that failed before the bank created anything, from its description alone: every way a finance
 * application's run fails is before creation (invalid input, the callback URL refused, the create refused or failed),
 * so nothing was learned. Not a query: a closed run's query goes to the build it was pinned to (Worker Versioning),
 * whose workers are gone once a deploy has drained it, and the query would never be answered. `done`: the run has
 * ended. Undefined when the run did record an application id (a failure this reading does not know): queried then.
 */
export function neverCreated(
  description: Pick<WorkflowExecutionDescription, 'typedSearchAttributes' | 'closeTime' | 'startTime'>,
  merchantReference: string,
): FinanceApplicationState | undefined {
  if (description.typedSearchAttributes.get(FinanceApplicationId) !== undefined) return undefined;
  return initialFinanceApplicationState(
    merchantReference,
    (description.closeTime ?? description.startTime).toISOString(),
    true,
  );
}

/** Waits until the application reaches a terminal status or its deadline, and returns the final state. */
export async function awaitFinanceApplication(
  client: Client,
  merchant: MerchantScope | string,
  merchantReference: string,
): Promise<FinanceApplicationState> {
  const workflowId = await resolveFinanceApplicationId(client, merchant, merchantReference);
  return client.workflow.getHandle<typeof financeApplicationWorkflow>(workflowId).result();
}
