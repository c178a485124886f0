import type { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Facade, MerchantEndpoint } from '../chaos/merchant';
import { sandboxCall, sleep, type ManagedProcess } from '../harness/processes';
import type { RefreshView } from '../chaos/truth';
import type { ApplicationRecord, ApplicationScript, WebhookDelivery } from '../../src/sandbox/types';
import { FinanceApplicationId, FinanceApplicationStatus } from '../../src/shared/search-attributes';
import { financeApplicationWorkflowType } from '../../src/shared/finance-application';
import type { PendingAtKill, VisibleApplication } from './checks';

/**
 * The cluster run's ways of driving and waiting on the stack (tools/cluster/run.ts, and its rolling upgrade in
 * tools/cluster/upgrade.ts): each waits on what the product shows (the facade, the sandbox's record, the server),
 * bounded.
 */

export const NAMESPACE = 'default';
export const TASK_QUEUE = 'paylater';

/** The run cannot go on (exit 1 with this message). */
export class Failure extends Error {}

export const out = (line: string) => process.stdout.write(`${line}\n`);
export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function lifecycle(statuses: string[], everyMs: number, dropWebhooks: boolean): ApplicationScript {
  return {
    steps: statuses.map((status) => ({ status, afterMs: everyMs, ...(dropWebhooks ? { dropWebhook: true } : {}) })),
    webhooks: { drop: false },
  };
}

/** Waits until every worker polls the task queue; returns their identities in the order of `workers`. */
export async function waitForPollers(connection: Connection, workers: ManagedProcess[], timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { pollers } = await connection.workflowService.describeTaskQueue({
      namespace: NAMESPACE,
      taskQueue: { name: TASK_QUEUE, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    const identities = workers.map((w) => (pollers ?? []).find((p) => p.identity?.startsWith(`${w.pid}@`))?.identity);
    if (identities.every((id): id is string => Boolean(id))) return identities;
    if (Date.now() > deadline) throw new Failure(`workers not polling ${TASK_QUEUE} within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

/** Running workflows' activities started by `identity`; looked at again until one is of a `wanted` type. */
export async function snapshotUntilBusy(
  connection: Connection,
  identity: string,
  timeoutMs: number,
  /** Wait until one of the worker's activities is of a type this accepts (one the bank's slowness holds). */
  wanted: (activityType: string) => boolean = () => true,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pending: PendingAtKill[] = [];
    const { executions } = await connection.workflowService.listWorkflowExecutions({
      namespace: NAMESPACE,
      query: `ExecutionStatus = 'Running'`,
      pageSize: 1000,
    });
    for (const e of executions ?? []) {
      const d = await connection.workflowService
        .describeWorkflowExecution({ namespace: NAMESPACE, execution: e.execution })
        .catch(() => undefined);
      for (const a of d?.pendingActivities ?? []) {
        if (
          a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED &&
          a.lastWorkerIdentity === identity
        ) {
          pending.push({
            workflowId: e.execution!.workflowId!,
            runId: e.execution!.runId!,
            activityId: a.activityId!,
            activityType: a.activityType?.name ?? '?',
          });
        }
      }
    }
    if (pending.some((p) => wanted(p.activityType)) || Date.now() > deadline) return pending;
    await sleep(250);
  }
}

export async function visibleApplications(client: Client, refs: string[]): Promise<VisibleApplication[]> {
  return Promise.all(
    refs.map(async (ref) => {
      const found: VisibleApplication['found'] = [];
      for await (const wf of client.workflow.list({
        // A run that continued as new (a move to a new build, a long history) is not the application: its last run is.
        query:
          `WorkflowType = '${financeApplicationWorkflowType}' AND MerchantReference = '${ref}' AND ` +
          `ExecutionStatus != 'ContinuedAsNew'`,
      })) {
        found.push({
          workflowId: wf.workflowId,
          financeApplicationId: wf.typedSearchAttributes.get(FinanceApplicationId),
          status: wf.typedSearchAttributes.get(FinanceApplicationStatus),
          closed: wf.status.name !== 'RUNNING',
        });
      }
      return { merchantReference: ref, found };
    }),
  );
}

export async function waitForApplications(facade: Facade, refs: string[], bound: number): Promise<void> {
  const open = new Set(refs);
  while (open.size > 0 && Date.now() < bound) {
    for (const ref of [...open]) {
      const res = await facade.request(1, 'GET', `/applications/${ref}`);
      if (res.status === 200 && (res.body as { done?: boolean }).done) open.delete(ref);
    }
    if (open.size > 0) await sleep(2_000);
  }
}

export async function readRefresh(facade: Facade, consentId: string, ok: (v: RefreshView) => boolean, bound: number) {
  let last: RefreshView | undefined;
  for (;;) {
    const res = await facade.request(1, 'GET', `/consents/${consentId}/refresh`);
    if (res.status === 200) last = res.body as RefreshView;
    if ((last && ok(last)) || Date.now() > bound) return last;
    await sleep(1_000);
  }
}

/** Until the bank has no webhook still being attempted (every copy delivered, failed or dropped). */
export async function waitForBankDeliveries(sandboxUrl: string, boundMs: number): Promise<void> {
  const bound = Date.now() + boundMs;
  while (Date.now() < bound) {
    const apps = await sandboxCall<ApplicationRecord[]>(sandboxUrl, 'GET', '/_sandbox/applications');
    const account = await sandboxCall<WebhookDelivery[]>(sandboxUrl, 'GET', '/_sandbox/account-webhooks');
    if (![...apps.flatMap((a) => a.webhooks), ...account].some((d) => d.outcome === 'pending')) return;
    await sleep(2_000);
  }
}

/** Until the merchant received as many transaction events for `consentId` as the bank had acknowledged. */
export async function waitForTransactions(
  merchant: MerchantEndpoint,
  consentId: string,
  sandboxUrl: string,
  boundMs: number,
) {
  const bound = Date.now() + boundMs;
  while (Date.now() < bound) {
    const account = await sandboxCall<WebhookDelivery[]>(sandboxUrl, 'GET', '/_sandbox/account-webhooks');
    const sent = account.filter((d) => d.kind === 'transactionEvent' && String(d.body.consentId) === consentId);
    const received = merchant.transactionBatches
      .filter((b) => b.consentId === consentId)
      .reduce((n, b) => n + b.events, 0);
    if (sent.length > 0 && received >= sent.length) return;
    await sleep(2_000);
  }
}
