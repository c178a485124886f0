import { randomUUID } from 'node:crypto';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  financeApplicationStateQuery,
  financeApplicationWorkflowType,
  startFinanceApplicationUpdate,
  type FinanceApplicationInput,
  type FinanceApplicationSettings,
  type FinanceApplicationStarted,
  type FinanceApplicationState,
} from '../shared/finance-application';
import { financeApplicationWorkflowId, REFERENCE_PATTERN } from '../shared/ids';
import { MerchantReference } from '../shared/search-attributes';
import type { financeApplicationWorkflow } from '../workflows/finance-application';

export type {
  FinanceApplicationSettings,
  FinanceApplicationStarted,
  FinanceApplicationState,
  StatusChange,
  StatusSource,
} from '../shared/finance-application';
export { FINANCE_APPLICATION_DEFAULTS, FinanceApplicationFailureType } from '../shared/finance-application';

export interface StartFinanceApplicationRequest {
  /** The merchant's reference: the idempotency key (one reference, one application at the bank). */
  merchantReference: string;
  /** The bank's create request: redirectUrl and any other fields, passed on (with merchantReference). */
  application: { redirectUrl: string; [field: string]: unknown };
  /** Optional URL that receives a POST per status change, with an Idempotency-Key header. */
  callbackUrl?: string;
  settings?: FinanceApplicationSettings;
}

/**
 * Starts the application's workflow, or reaches the one that exists (update-with-start, USE_EXISTING), and
 * returns the bank's create response as soon as the application exists. `created` tells whether this call
 * started it. A reference whose workflow completed returns that application; one whose workflow failed (the bank
 * refused or could not be reached) may be started again (ALLOW_DUPLICATE_FAILED_ONLY).
 * Throws WorkflowUpdateFailedError (cause type FinanceApplicationCreateRejected / ...CreateFailed) when the bank
 * did not create the application.
 */
export async function startFinanceApplication(
  client: Client,
  request: StartFinanceApplicationRequest,
  options: { taskQueue: string },
): Promise<FinanceApplicationStarted> {
  const { merchantReference } = request;
  if (!REFERENCE_PATTERN.test(merchantReference)) {
    throw new RangeError(`merchantReference must match ${String(REFERENCE_PATTERN)}`);
  }
  const workflowId = financeApplicationWorkflowId(merchantReference);
  // Only the call whose start input is used (the one that created the run) carries a matching request id.
  const requestId = randomUUID();
  const input: FinanceApplicationInput = {
    merchantReference,
    application: { ...request.application, merchantReference },
    callbackUrl: request.callbackUrl,
    settings: request.settings,
    startRequestId: requestId,
  };
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof financeApplicationWorkflow>(
    financeApplicationWorkflowType,
    {
      workflowId,
      taskQueue: options.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      // A completed application is never created twice; a failed creation may be tried again.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: [{ key: MerchantReference, value: merchantReference }],
      staticSummary: `Finance application ${merchantReference}`,
      staticDetails: staticDetails(request),
    },
  );
  try {
    return await client.workflow.executeUpdateWithStart(startFinanceApplicationUpdate, {
      args: [{ requestId }],
      startWorkflowOperation,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    // The reference's workflow has completed: its result holds the application it created.
    const result = await financeApplicationHandle(client, merchantReference).result();
    if (!result.financeApplicationId || !result.bank) throw err;
    return {
      merchantReference,
      workflowId,
      financeApplicationId: result.financeApplicationId,
      bank: result.bank,
      created: false,
    };
  }
}

/** The reference's workflow (latest run). */
export function financeApplicationHandle(
  client: Client,
  merchantReference: string,
): WorkflowHandle<typeof financeApplicationWorkflow> {
  return client.workflow.getHandle<typeof financeApplicationWorkflow>(financeApplicationWorkflowId(merchantReference));
}

/**
 * Current status, history and counters of the reference's application. A completed workflow answers from its
 * result (no worker needed); a running one through the query. Throws WorkflowNotFoundError for an unknown reference.
 */
export async function getFinanceApplication(
  client: Client,
  merchantReference: string,
): Promise<FinanceApplicationState> {
  const handle = financeApplicationHandle(client, merchantReference);
  const { status } = await handle.describe();
  if (status.name === 'COMPLETED') return handle.result();
  return handle.query(financeApplicationStateQuery);
}

/** Waits until the application reaches a terminal status or its deadline, and returns the final state. */
export async function awaitFinanceApplication(
  client: Client,
  merchantReference: string,
): Promise<FinanceApplicationState> {
  return financeApplicationHandle(client, merchantReference).result();
}

/** The Web UI's static details: what was asked, in markdown. */
function staticDetails(request: StartFinanceApplicationRequest): string {
  const s = request.settings ?? {};
  const lines = [
    `Merchant reference: \`${request.merchantReference}\``,
    `Redirect URL: ${request.application.redirectUrl}`,
    `Merchant callback: ${request.callbackUrl ? safeOrigin(request.callbackUrl) : 'none'}`,
  ];
  const overrides = Object.entries(s).filter(([, v]) => v !== undefined);
  if (overrides.length > 0)
    lines.push(`Settings: ${overrides.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}`);
  return lines.join('\n');
}

/** Callback URLs may carry secrets in their path or query: show the origin only. */
function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid url)';
  }
}
