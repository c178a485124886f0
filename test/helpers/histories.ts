import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';

/**
 * The series new finance-application histories are recorded under (test/histories): none before the poll policy,
 * `v2-` under it (POLL_POLICY_PATCH), `v3-` since a webhook's change keeps the running poll (KEEP_POLL_PATCH).
 * Each series stays committed: runs in flight at a deploy replay the one they were recorded under.
 */
export const FINANCE_HISTORY_SERIES = 'v3';

/** With RECORD_HISTORIES=1, saves a finance application's history for the replay test. */
export function recordFinanceHistory(history: History, name: string): void {
  if (process.env.RECORD_HISTORIES !== '1') return;
  writeFileSync(
    join(__dirname, '..', 'histories', `finance-application-${FINANCE_HISTORY_SERIES}-${name}.json`),
    historyToJSON(history),
  );
}
