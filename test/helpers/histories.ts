import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';

/**
 * The series new histories are recorded under (test/histories): `v5-` since 1.0.0, the first build without patch
 * markers. The series before it (none, `v2-` to `v4-`) were recorded with patches and are replayed against the bridge
 * release's bundle only (test/histories/releases/0.9.0, test/replay/bridge-release-replay.test.ts).
 */
export const HISTORY_SERIES = 'v5';

/** With RECORD_HISTORIES=1, saves a finance application's history for the replay test. */
export function recordFinanceHistory(history: History, name: string): void {
  if (process.env.RECORD_HISTORIES !== '1') return;
  writeFileSync(
    join(__dirname, '..', 'histories', `finance-application-${HISTORY_SERIES}-${name}.json`),
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
 * test/replay/consent-replay.test.ts); a name with a series carries HISTORY_SERIES.
 */
export async function recordConsentHistory(name: string, handle: WorkflowHandle): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  writeFileSync(join(__dirname, '..', 'histories', `${name}.json`), consentHistoryFile(await handle.fetchHistory()));
}

export { runInputs, type RunInput } from '../../tools/harness/run-inputs';
