import { createHash, randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { applicationPhase, isDone, listedPhaseFacts, type ApplicationPhase } from '../shared/application-phase';
import {
  FINANCE_APPLICATION_DEFAULTS,
  financeApplicationWorkflowType,
  startFinanceApplicationUpdate,
  type FinanceApplicationInput,
  type FinanceApplicationSettings,
  type FinanceApplicationStarted,
} from '../shared/finance-application';
import { optionalTsToDate } from '@temporalio/common';
import { decodePayloadAt, searchAttributeValue } from './raw-decoding';
import {
  applicationSearchQuery,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type ApplicationSearchFilter,
} from '../shared/application-search';
import { creationDifferences } from '../shared/application-identity';
import { financeApplicationWorkflowId, REFERENCE_PATTERN } from '../shared/ids';
import {
  FinanceApplicationCreatedAt,
  FinanceApplicationId,
  FinanceApplicationStatus,
  MerchantId,
  MerchantReference,
} from '../shared/search-attributes';
import { merchantScope, type MerchantScope } from './merchant-scope';
import type { financeApplicationWorkflow } from '../workflows/finance-application/workflow';

export { FINANCE_APPLICATION_DEFAULTS, FinanceApplicationFailureType } from '../shared/finance-application';
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../shared/application-search';
export { merchantScope, type MerchantScope } from './merchant-scope';
export {
  FinanceApplicationWaits,
  TooManyStatusWaitsError,
  type JoinedWait,
  waitForFinanceApplicationChange,
  type FinanceApplicationChange,
  type WaitForChangeOptions,
} from './status-waits';
export {
  resolveFinanceApplicationId,
  financeApplicationHandle,
  getFinanceApplication,
  getFinanceApplicationView,
  phaseOf,
  readFinanceApplication,
  awaitFinanceApplication,
} from './finance-application-reads';

export type {
  FinanceApplicationSettings,
  FinanceApplicationStarted,
  FinanceApplicationState,
  StatusChange,
  StatusSource,
} from '../shared/finance-application';
export type { ApplicationSearchFilter } from '../shared/application-search';
export { APPLICATION_PHASES, type ApplicationPhase } from '../shared/application-phase';

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
 * The reference already names an application created with another request
 * (docs/decisions/0038-reference-reuse-conflict.md): `fields` lists where they differ (`application.redirectUrl`,
 * `callbackUrl`, `settings.deadlineMs`). Nothing was started or changed. The facade answers it 409.
 */
export class FinanceApplicationConflictError extends Error {
  constructor(
    readonly merchantReference: string,
    readonly workflowId: string,
    readonly fields: string[],
  ) {
    super(
      `Reference ${merchantReference} is already used by an application created with a different ${fields.join(', ')}`,
    );
    this.name = 'FinanceApplicationConflictError';
  }
}

/**
 * Starts the application's workflow, or reaches the one that exists (update-with-start, USE_EXISTING), and
 * returns the bank's create response as soon as the application exists. `created` tells whether this call
 * started it. An existing application created with another request (bank fields, callbackUrl, or a setting this
 * request names) throws FinanceApplicationConflictError; `options.settingsNamed` says which settings the caller
 * chose (default: every one in `request.settings`), the others being defaults that may have changed since. A reference whose workflow completed returns that application; one whose workflow failed (the bank
 * refused or could not be reached) may be started again (ALLOW_DUPLICATE_FAILED_ONLY).
 * Throws WorkflowUpdateFailedError (cause type FinanceApplicationCreateRejected / ...CreateFailed) when the bank
 * did not create the application.
 */
export async function startFinanceApplication(
  client: Client,
  merchant: MerchantScope | string,
  request: StartFinanceApplicationRequest,
  options: { taskQueue: string; settingsNamed?: readonly (keyof FinanceApplicationSettings)[] },
): Promise<FinanceApplicationStarted> {
  const { merchantId } = merchantScope(merchant);
  const { merchantReference } = request;
  if (!REFERENCE_PATTERN.test(merchantReference)) {
    throw new RangeError(`merchantReference must match ${String(REFERENCE_PATTERN)}`);
  }
  const workflowId = financeApplicationWorkflowId(merchantId, merchantReference);
  // Only the call whose start input is used (the one that created the run) carries a matching request id.
  const requestId = randomUUID();
  const input: FinanceApplicationInput = {
    merchantId,
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
      // Set once, at the first start (a start that finds the workflow running changes nothing); carried over on
      // continue-as-new: the creation time GET /applications filters on.
      typedSearchAttributes: [
        { key: MerchantId, value: merchantId },
        { key: MerchantReference, value: merchantReference },
        { key: FinanceApplicationCreatedAt, value: new Date() },
      ],
      staticSummary: `Finance application ${merchantReference}`,
      staticDetails: staticDetails(request),
    },
  );
  const settingsNamed =
    options.settingsNamed ??
    (Object.entries(request.settings ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k]) => k) as (keyof FinanceApplicationSettings)[]);
  let started: FinanceApplicationStarted;
  try {
    started = await client.workflow.executeUpdateWithStart(startFinanceApplicationUpdate, {
      args: [{ requestId }],
      startWorkflowOperation,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    // The reference's workflow has completed: its result holds the application it created.
    const completed = await completedApplication(client, workflowId, merchantReference);
    if (!completed) throw err;
    started = completed;
  }
  if (!started.created) {
    const stored = await storedInput(client, workflowId);
    const fields = stored ? creationDifferences(stored, input, settingsNamed) : [];
    if (fields.length > 0) throw new FinanceApplicationConflictError(merchantReference, workflowId, fields);
  }
  return started;
}

/**
 * The start input of the workflow's latest run (continue-as-new passes the first run's on, see
 * src/workflows/finance-application/workflow.ts): its first history event, decoded by the client's converter.
 * Undefined when it cannot be read (no such run): the existing application is answered, as before this check.
 */
async function storedInput(client: Client, workflowId: string): Promise<FinanceApplicationInput | undefined> {
  const { history } = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 1,
  });
  const payloads = history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  if (!payloads?.length) return undefined;
  return decodePayloadAt<FinanceApplicationInput>(client.options.loadedDataConverter, 0, payloads);
}

/** The answer of a start that found the application's workflow completed: from its result. */
async function completedApplication(
  client: Client,
  workflowId: string,
  merchantReference: string,
): Promise<FinanceApplicationStarted | undefined> {
  const result = await client.workflow.getHandle<typeof financeApplicationWorkflow>(workflowId).result();
  if (!result.financeApplicationId || !result.bank) return undefined;
  return {
    merchantReference,
    workflowId,
    financeApplicationId: result.financeApplicationId,
    bank: result.bank,
    created: false,
  };
}

/** One application in a listing (contract: GET /applications `applications` items). */
export interface FinanceApplicationSummary {
  merchantReference: string;
  financeApplicationId: string | null;
  /** The latest recorded status (null until the bank created the application). */
  status: string | null;
  /** Where it stands (src/shared/application-phase.ts); visibility's view: a terminal status ends `following`. */
  phase: ApplicationPhase;
  /** True once no status change will come (the phase is past `following`). */
  done: boolean;
  /** ISO time the application was first started (across continue-as-new). */
  createdAt: string;
}

export interface FinanceApplicationPage {
  applications: FinanceApplicationSummary[];
  /** Pass it as `pageToken` for the next page with the same filter; null on the last page. */
  nextPageToken: string | null;
}

export interface ListPageOptions {
  /** 1 to MAX_PAGE_SIZE (100); DEFAULT_PAGE_SIZE (50) when absent. */
  pageSize?: number;
  /** The previous page's nextPageToken, with the same filter. */
  pageToken?: string;
}

/** Page tokens are the server's, as base64url: opaque to callers, at most 4 KiB of text. */
export const PAGE_TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,4096}$/;

/**
 * One page of finance applications matching the filter, newest run first, through Temporal's visibility API
 * (eventually consistent: a change shows after a moment). Only the latest run of each application; applications
 * whose creation failed are not listed. Throws RangeError for a filter value, page size or page token out of
 * bounds, or a page token the server does not take for this query.
 */
export async function listFinanceApplications(
  client: Client,
  merchant: MerchantScope | string,
  filter: ApplicationSearchFilter = {},
  page: ListPageOptions = {},
  /** The service's terminal statuses (BANK_TERMINAL_STATUSES): a listed application in one is no longer followed. */
  vocabulary: { terminalStatuses?: readonly string[] } = {},
): Promise<FinanceApplicationPage> {
  const terminalStatuses = vocabulary.terminalStatuses ?? FINANCE_APPLICATION_DEFAULTS.terminalStatuses;
  const query = applicationSearchQuery(filter, merchantScope(merchant));
  const pageSize = page.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw new RangeError(`pageSize must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  const nextPageToken = page.pageToken === undefined ? undefined : decodePageToken(page.pageToken, query);
  let response;
  try {
    response = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize,
      nextPageToken,
    });
  } catch (err) {
    // INVALID_ARGUMENT (3) with a token given: a token of another query, or altered. The query itself is ours.
    if (page.pageToken !== undefined && (err as { code?: unknown }).code === 3) {
      throw new RangeError('pageToken is not valid for this query: start again without it');
    }
    throw err;
  }
  const applications = (response.executions ?? []).map((execution): FinanceApplicationSummary => {
    const fields = execution.searchAttributes?.indexedFields;
    const workflowId = execution.execution?.workflowId ?? '';
    const startTime = execution.startTime?.seconds ? optionalTsToDate(execution.startTime) : undefined;
    const createdAt = searchAttributeValue(fields, FinanceApplicationCreatedAt) ?? startTime;
    const status = searchAttributeValue(fields, FinanceApplicationStatus) ?? null;
    const runOpen =
      execution.status === temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
    const phase = applicationPhase(listedPhaseFacts(runOpen, status, terminalStatuses));
    return {
      merchantReference:
        searchAttributeValue(fields, MerchantReference) ?? workflowId.slice(workflowId.lastIndexOf(':') + 1),
      financeApplicationId: searchAttributeValue(fields, FinanceApplicationId) ?? null,
      status,
      phase,
      done: isDone(phase),
      createdAt: (createdAt ?? new Date(0)).toISOString(),
    };
  });
  const token = response.nextPageToken;
  return { applications, nextPageToken: token && token.length > 0 ? encodePageToken(token, query) : null };
}

/** Page tokens carry the first bytes of their query's hash: a token used with other filters is refused. */
const QUERY_TAG_BYTES = 8;
const queryTag = (query: string) => createHash('sha256').update(query).digest().subarray(0, QUERY_TAG_BYTES);

function encodePageToken(serverToken: Uint8Array, query: string): string {
  return Buffer.concat([queryTag(query), serverToken]).toString('base64url');
}

function decodePageToken(token: string, query: string): Uint8Array {
  const bytes = PAGE_TOKEN_PATTERN.test(token) ? Buffer.from(token, 'base64url') : undefined;
  if (!bytes || bytes.length <= QUERY_TAG_BYTES) throw new RangeError('pageToken is not a page token');
  if (!bytes.subarray(0, QUERY_TAG_BYTES).equals(queryTag(query))) {
    throw new RangeError('pageToken belongs to other filters: start again without it');
  }
  return bytes.subarray(QUERY_TAG_BYTES);
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
