import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
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

export { runInputs, type RunInput } from '../../tools/harness/run-inputs';
