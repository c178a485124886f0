import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';

/**
 * The series new finance-application histories are recorded under (test/histories): none before the poll policy,
 * `v2-` under it (POLL_POLICY_PATCH), `v3-` since a webhook's change keeps the running poll (KEEP_POLL_PATCH), `v4-` since tenancy (the merchant
 * in the input and in the activities' inputs).
 * Each series stays committed: runs in flight at a deploy replay the one they were recorded under.
 */
export const FINANCE_HISTORY_SERIES = 'v4';

/** With RECORD_HISTORIES=1, saves a finance application's history for the replay test. */
export function recordFinanceHistory(history: History, name: string): void {
  if (process.env.RECORD_HISTORIES !== '1') return;
  writeFileSync(
    join(__dirname, '..', 'histories', `finance-application-${FINANCE_HISTORY_SERIES}-${name}.json`),
    historyToJSON(history),
  );
}

/**
 * A history as JSON (enum names, string longs, base64 bytes), read back by test/replay/consent-replay.test.ts with
 * History.fromObject. (The SDK's historyToJSON fails for these in this install: two copies of protobufjs 8.)
 */
export function consentHistoryFile(history: temporal.api.history.v1.IHistory): string {
  const { History } = temporal.api.history.v1;
  const json = History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
  return JSON.stringify(json, null, 1) + '\n';
}

/**
 * With RECORD_HISTORIES set, writes a consent-side workflow's history to test/histories/<name>.json (replayed by
 * test/replay/consent-replay.test.ts). Refresh histories recorded under LEARNED_BANKS_PATCH are named
 * `consent-refresh-v2-…`; the unprefixed ones were recorded before it and stay committed: runs in flight at a
 * deploy replay the code path they were recorded under.
 */
export async function recordConsentHistory(name: string, handle: WorkflowHandle): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  writeFileSync(join(__dirname, '..', 'histories', `${name}.json`), consentHistoryFile(await handle.fetchHistory()));
}

/** One run of a workflow chain and the input it started with, as stored (encoded) and as decoded JSON. */
export interface RunInput {
  runId: string;
  /** Bytes of the run's start input as Temporal stores it (the limit is 2 MB per payload). */
  storedBytes: number;
  /** Bytes of the decoded input (the workflow's argument as JSON). */
  jsonBytes: number;
  /** The run continued as new (its input was carried by the next one). */
  continuedAsNew: boolean;
}

/**
 * Every run of a workflow id, newest first, walking back from the latest run through each started event's
 * `continuedExecutionRunId`: what each run started with. After continue-as-new that is the carried snapshot.
 */
export async function runInputs(
  client: Client,
  workflowId: string,
  codec: PayloadCodec,
  maxRuns = 1_000,
): Promise<RunInput[]> {
  const runs: RunInput[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId && runs.length < maxRuns) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    const payloads = started?.input?.payloads ?? [];
    const stored = temporal.api.common.v1.Payloads.encode({ payloads }).finish().length;
    const decoded = await codec.decode(payloads);
    runs.push({
      runId,
      storedBytes: stored,
      jsonBytes: decoded.reduce((sum, p) => sum + (p.data?.length ?? 0), 0),
      continuedAsNew: events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes),
    });
    runId = started?.continuedExecutionRunId || undefined;
  }
  return runs;
}
