import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import {
  attachRefreshUpdate,
  consentRefreshProgressQuery,
  type ConsentRefreshInput,
  type ConsentRefreshProgress,
  type ConsentRefreshResult,
} from '../shared/consent-refresh';
import { consentRefreshWorkflowId } from '../shared/ids';
import { ConsentId } from '../shared/search-attributes';
import type { consentRefreshWorkflow } from '../workflows/consent-refresh';

export type {
  BankRefreshResult,
  ConsentRefreshInput,
  ConsentRefreshProgress,
  ConsentRefreshResult,
  RefreshedAccount,
  RefreshEndReason,
} from '../shared/consent-refresh';

export interface StartConsentRefreshResult {
  consentId: string;
  workflowId: string;
  /** The bank's refresh task id, from PUT /refresh. */
  taskId: string;
}

/**
 * Starts a refresh of the consent, or attaches to the one running (update-with-start, USE_EXISTING): returns as
 * soon as PUT /refresh answered, with the same taskId for every caller of one run. Once a refresh has closed, the
 * next call starts a new run (ALLOW_DUPLICATE). Inputs of an attaching call are ignored: the running refresh's win.
 * Throws WorkflowUpdateFailedError (cause type RefreshNotStarted) when PUT /refresh failed for good.
 */
export async function startConsentRefresh(
  client: Client,
  input: ConsentRefreshInput,
  options: { taskQueue: string },
): Promise<StartConsentRefreshResult> {
  const workflowId = consentRefreshWorkflowId(input.consentId);
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof consentRefreshWorkflow>(
    'consentRefreshWorkflow',
    {
      workflowId,
      taskQueue: options.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [{ key: ConsentId, value: input.consentId }],
      staticSummary: `Consent refresh ${input.consentId}`,
      staticDetails: input.expectedBankCodes?.length
        ? `Expected banks: ${input.expectedBankCodes.join(', ')}`
        : 'Expected banks: not given (ends after the quiet period)',
    },
  );
  const { taskId } = await client.workflow.executeUpdateWithStart(attachRefreshUpdate, {
    args: [{}],
    startWorkflowOperation,
  });
  return { consentId: input.consentId, workflowId, taskId };
}

/** The consent's latest refresh (running or closed). */
export function consentRefreshHandle(client: Client, consentId: string): WorkflowHandle<typeof consentRefreshWorkflow> {
  return client.workflow.getHandle<typeof consentRefreshWorkflow>(consentRefreshWorkflowId(consentId));
}

/** Progress of the consent's latest refresh: banks reported so far, missing ones, done. Throws WorkflowNotFoundError. */
export async function getConsentRefreshProgress(client: Client, consentId: string): Promise<ConsentRefreshProgress> {
  return consentRefreshHandle(client, consentId).query(consentRefreshProgressQuery);
}

/** Waits for the consent's latest refresh to end and returns its result. */
export async function awaitConsentRefreshResult(client: Client, consentId: string): Promise<ConsentRefreshResult> {
  return consentRefreshHandle(client, consentId).result();
}
