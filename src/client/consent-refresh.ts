import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  attachRefreshUpdate,
  consentRefreshProgressQuery,
  consentRefreshWorkflowType,
  lateAccountEventsQuery,
  type ConsentRefreshInput,
  type ConsentRefreshProgress,
  type ConsentRefreshResult,
  type LateAccountEventsState,
} from '../shared/consent-refresh';
import { consentRefreshWorkflowId, lateAccountEventsWorkflowId } from '../shared/ids';
import { learnedBankCodes, mergeLateReports } from '../shared/late-reports';
import { ConsentId, MerchantId } from '../shared/search-attributes';
import { claimConsent, ConsentNotFoundError, consentOwner } from './consent-claims';
import { merchantScope, type MerchantScope } from './merchant-scope';
import type { consentRefreshWorkflow } from '../workflows/consent-refresh/workflow';
import type { lateAccountEventsWorkflow } from '../workflows/late-account-events/workflow';

export type {
  BankRefreshResult,
  ConsentRefreshInput,
  ConsentRefreshProgress,
  ConsentRefreshResult,
  LateAccountEventsState,
  LateBankReport,
  LateBankReportEvent,
  LateReportReason,
  RefreshedAccount,
  RefreshEndReason,
} from '../shared/consent-refresh';
export { REFRESH_NOT_STARTED } from '../shared/consent-refresh';

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
 * Unless the caller gives `knownBankCodes` itself, the banks learned from the consent's earlier refreshes are
 * looked up (lookUpKnownBankCodes) and passed on: without `expectedBankCodes` the refresh waits for them.
 * Throws WorkflowUpdateFailedError (cause type RefreshNotStarted) when PUT /refresh failed for good.
 */
export async function startConsentRefresh(
  client: Client,
  merchant: MerchantScope | string,
  request: Omit<ConsentRefreshInput, 'merchantId'>,
  options: {
    taskQueue: string;
    /** Where the late reports this refresh hands off itself go (the merchant's TRANSACTIONS_CALLBACK_URL). */
    lateReportsCallbackUrl?: string;
    /** Whether a refresh claims a free consent (claimConsent's selfClaim; default true). */
    selfClaim?: boolean;
  },
): Promise<StartConsentRefreshResult> {
  const { merchantId } = merchantScope(merchant);
  // The consent must be the merchant's (or, where merchants claim, free: its first refresh claims it); another
  // merchant's throws ConsentHeldByAnotherError, an unknown one without selfClaim ConsentNotFoundError.
  await claimConsent(client, merchantId, request.consentId, {
    taskQueue: options.taskQueue,
    selfClaim: options.selfClaim,
  });
  await assertNoRefreshOfAnother(client, merchantId, request.consentId);
  let input: ConsentRefreshInput = { ...request, merchantId };
  const workflowId = consentRefreshWorkflowId(input.consentId);
  if (input.knownBankCodes === undefined) {
    const known = await lookUpKnownBankCodes(client, merchantId, input.consentId);
    if (known !== undefined && known.length > 0) input = { ...input, knownBankCodes: known };
  }
  if (input.lateReportsCallbackUrl === undefined && options.lateReportsCallbackUrl !== undefined)
    input = { ...input, lateReportsCallbackUrl: options.lateReportsCallbackUrl };
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof consentRefreshWorkflow>(
    consentRefreshWorkflowType,
    {
      workflowId,
      taskQueue: options.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: MerchantId, value: merchantId },
        { key: ConsentId, value: input.consentId },
      ],
      staticSummary: `Consent refresh ${input.consentId}`,
      staticDetails: input.expectedBankCodes?.length
        ? `Expected banks: ${input.expectedBankCodes.join(', ')}`
        : input.knownBankCodes?.length
          ? `Expected banks: not given; learned from earlier refreshes: ${input.knownBankCodes.join(', ')}`
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

/**
 * Progress of the consent's latest refresh: banks reported so far, missing ones, done; amended by the late bank
 * reports of its taskId (mergeLateReports: `late: true` banks, `lateReports`). Throws WorkflowNotFoundError.
 */
export async function getConsentRefreshProgress(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): Promise<ConsentRefreshProgress & { lateReports: number }> {
  await assertConsentOf(client, merchant, consentId);
  await assertWorkflowOf(client, merchant, consentRefreshWorkflowId(consentId), consentId);
  const [progress, late] = await Promise.all([
    refreshProgress(consentRefreshHandle(client, consentId)),
    getLateBankReports(client, merchant, consentId),
  ]);
  return mergeLateReports(progress, late.reports);
}

/**
 * A refresh's progress; a completed refresh's is its result, read without a worker: a query of a closed run goes to
 * the build it was pinned to (Worker Versioning), whose workers are gone after a deploy (found by the cluster test's
 * rolling upgrade: GET /consents/:id/refresh failed once build A was stopped). Throws WorkflowNotFoundError.
 */
async function refreshProgress(handle: WorkflowHandle<typeof consentRefreshWorkflow>): Promise<ConsentRefreshProgress> {
  const { status } = await handle.describe();
  return status.name === 'COMPLETED' ? await handle.result() : await handle.query(consentRefreshProgressQuery);
}

/** A refresh of the consent still runs for its previous owner (released since): a start would attach to it. */
export class RefreshOfPreviousOwnerRunningError extends Error {
  constructor(readonly consentId: string) {
    super(
      `A refresh of consent ${consentId} started before it was claimed by this merchant is still running; retry once it ends`,
    );
    this.name = 'RefreshOfPreviousOwnerRunningError';
  }
}

async function assertNoRefreshOfAnother(client: Client, merchantId: string, consentId: string): Promise<void> {
  let description;
  try {
    description = await consentRefreshHandle(client, consentId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return;
    throw err;
  }
  if (description.status.name !== 'RUNNING') return;
  const owner = description.typedSearchAttributes.get(MerchantId);
  if (owner !== undefined && owner !== merchantId) throw new RefreshOfPreviousOwnerRunningError(consentId);
}

/**
 * The workflow was started for this merchant (its MerchantId). A consent
 * released by one merchant and claimed by another keeps the first one's workflows until new ones replace them:
 * they stay the first merchant's (ConsentNotFoundError to the new owner). Throws WorkflowNotFoundError too.
 */
async function assertWorkflowOf(
  client: Client,
  merchant: MerchantScope | string,
  workflowId: string,
  consentId: string,
): Promise<void> {
  const scope = merchantScope(merchant);
  const owner = (await client.workflow.getHandle(workflowId).describe()).typedSearchAttributes.get(MerchantId);
  if (owner !== scope.merchantId) throw new ConsentNotFoundError(consentId);
}

/** Waits for the consent's latest refresh to end and returns its result, amended by the late reports so far. */
export async function awaitConsentRefreshResult(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): Promise<ConsentRefreshResult & { lateReports: number }> {
  await assertConsentOf(client, merchant, consentId);
  await assertWorkflowOf(client, merchant, consentRefreshWorkflowId(consentId), consentId);
  const result = await consentRefreshHandle(client, consentId).result();
  return mergeLateReports(result, (await getLateBankReports(client, merchant, consentId)).reports);
}

/** The consent is the merchant's: its claim names it. Throws ConsentNotFoundError otherwise (the facade's 404). */
export async function assertConsentOf(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): Promise<void> {
  const scope = merchantScope(merchant);
  const owner = await consentOwner(client, consentId);
  if (owner === scope.merchantId) return;
  throw new ConsentNotFoundError(consentId);
}

/** The merchant's late-bank-reports workflow of the consent (latest run). */
export function lateBankReportsHandle(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): WorkflowHandle<typeof lateAccountEventsWorkflow> {
  return client.workflow.getHandle<typeof lateAccountEventsWorkflow>(
    lateAccountEventsWorkflowId(merchantScope(merchant).merchantId, consentId),
  );
}

/**
 * The reports kept by the merchant's own late workflow of the consent (none when no late report ever came, or none
 * is retained). Those of a late workflow from before they were keyed by owner: getConsentRefreshProgress.
 */
export async function getLateBankReports(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): Promise<LateAccountEventsState> {
  return lateReportsOf(client, lateAccountEventsWorkflowId(merchantScope(merchant).merchantId, consentId), consentId);
}

async function lateReportsOf(client: Client, workflowId: string, consentId: string): Promise<LateAccountEventsState> {
  try {
    return await client.workflow.getHandle<typeof lateAccountEventsWorkflow>(workflowId).query(lateAccountEventsQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { consentId, reports: [], received: 0, duplicates: 0 };
    throw err;
  }
}

/**
 * The banks a new refresh of the consent waits for when the merchant names none (learnedBankCodes): from the
 * latest refresh (on time and late answers, or the set it carried) and the late reports. `undefined` while a
 * refresh runs: a start then attaches to it and its inputs are ignored anyway.
 */
export async function lookUpKnownBankCodes(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): Promise<string[] | undefined> {
  let previous: ConsentRefreshProgress | undefined;
  try {
    previous = await refreshProgress(consentRefreshHandle(client, consentId));
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  if (previous !== undefined && !previous.done) return undefined;
  return learnedBankCodes(previous, (await getLateBankReports(client, merchant, consentId)).reports);
}
