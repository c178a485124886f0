import type { Client } from '@temporalio/client';
import type { AuditLog } from '../audit/audit-log';
import type { AuditActor, AuditDetails, AuditRecord } from '../security/audit-chain';
import type { MerchantKeyRing } from '../security/merchant-keys';
import { MERCHANT_ID_PATTERN } from '../shared/ids';

/**
 * Erasing a merchant (docs/operations.md#erasing-a-merchant, docs/decisions/0048-per-merchant-payload-keys.md):
 * 1. its open workflows are listed (visibility, `MerchantId`), and the erasure is recorded in the audit trail
 *    (action `erasure`) before anything changes: no record, no erasure;
 * 2. they are terminated (not cancelled: a cancellation runs workflow code, which would need the keys about to go);
 * 3. its keys are destroyed in the key store, leaving only when and by whom (MerchantKeyRing.erase);
 * 4. visibility is listed again until it has shown no new run for `settleMs`: it lags behind starts (seconds on a
 *    loaded server), so a run started just before, or meanwhile, is terminated too (its payloads were under the
 *    destroyed keys already, and left open it would fail every workflow task).
 * Afterwards no payload under its keys decodes anywhere (other processes within MERCHANT_KEY_CACHE_TTL), and no new
 * payload of it can be written. Idempotent: a second erasure keeps the first one's time.
 */
export interface MerchantErasureDeps {
  client: Client;
  ring: MerchantKeyRing;
  audit: AuditLog;
  /** How long visibility must show no new run of the merchant before the erasure ends (default 5 s). */
  settleMs?: number;
  /** The pause between two listings while settling (default 500 ms). */
  sweepIntervalMs?: number;
}

export interface MerchantErasure {
  merchantId: string;
  /** When its keys were destroyed (the first erasure's time when it was erased before). */
  erasedAt: string;
  /** True when the merchant was already erased before this call. */
  alreadyErased: boolean;
  /** The workflow ids terminated, each once. */
  terminated: string[];
  audit: AuditRecord;
}

const DEFAULT_SETTLE_MS = 5_000;
const DEFAULT_SWEEP_INTERVAL_MS = 500;

export async function eraseMerchant(
  deps: MerchantErasureDeps,
  request: { merchantId: string; actor: AuditActor; via: 'tool' | 'api'; details?: AuditDetails },
): Promise<MerchantErasure> {
  const { merchantId, actor } = request;
  if (!MERCHANT_ID_PATTERN.test(merchantId))
    throw new RangeError(`merchant id must match ${String(MERCHANT_ID_PATTERN)}`);
  const before = await deps.ring.store.read(merchantId);
  const open = await openWorkflowsOf(deps.client, merchantId);
  const audit = await deps.audit.append({
    actor,
    action: 'erasure',
    target: { kind: 'merchant', id: merchantId },
    details: {
      via: request.via,
      keyStore: deps.ring.store.location,
      keyGenerations: before?.keys.length ?? 0,
      openWorkflows: open.length,
      alreadyErased: before?.erasure !== undefined,
      ...request.details,
    },
  });
  // Every run terminated (or closed meanwhile), by run id: a later listing that still shows one is not news.
  const terminated = new Map<string, string>();
  const reason = `merchant ${merchantId} erased (docs/operations.md#erasing-a-merchant)`;
  await terminateAll(deps.client, open, reason, terminated);
  const record = await deps.ring.erase(merchantId, actor.name);
  await sweepUntilSettled(deps, merchantId, reason, terminated);
  return {
    merchantId,
    erasedAt: record.erasure!.at,
    alreadyErased: before?.erasure !== undefined,
    terminated: [...new Set(terminated.values())].sort(),
    audit,
  };
}

/**
 * The merchant's running workflows, by visibility's MerchantId (set on every workflow a merchant owns). Listed raw:
 * the SDK's list decodes memos, and a memo under keys already erased would stop the sweep.
 */
async function openWorkflowsOf(client: Client, merchantId: string): Promise<{ workflowId: string; runId: string }[]> {
  const found: { workflowId: string; runId: string }[] = [];
  const query = `MerchantId = "${merchantId}" AND ExecutionStatus = "Running"`;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize: 1_000,
      nextPageToken,
    });
    for (const execution of page.executions ?? []) {
      const { workflowId, runId } = execution.execution ?? {};
      if (workflowId && runId) found.push({ workflowId, runId });
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return found;
}

/** Lists and terminates until visibility has shown no run not terminated yet for a whole settle window. */
async function sweepUntilSettled(
  deps: MerchantErasureDeps,
  merchantId: string,
  reason: string,
  terminated: Map<string, string>,
): Promise<void> {
  const settleMs = deps.settleMs ?? DEFAULT_SETTLE_MS;
  const intervalMs = deps.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  let quietSince = Date.now();
  for (;;) {
    // A run terminated a moment ago may still be listed as running: only runs not seen before count.
    const fresh = (await openWorkflowsOf(deps.client, merchantId)).filter(({ runId }) => !terminated.has(runId));
    if (fresh.length > 0) quietSince = Date.now();
    await terminateAll(deps.client, fresh, reason, terminated);
    if (Date.now() - quietSince >= settleMs) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

async function terminateAll(
  client: Client,
  runs: { workflowId: string; runId: string }[],
  reason: string,
  terminated: Map<string, string>,
): Promise<void> {
  for (const { workflowId, runId } of runs) {
    try {
      await client.workflow.getHandle(workflowId, runId).terminate(reason);
    } catch (err) {
      // Closed between the list and now: what termination wanted.
      if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
    }
    terminated.set(runId, workflowId);
  }
}
