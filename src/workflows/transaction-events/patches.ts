import { patched } from '@temporalio/workflow';
import type { TransactionBatches } from './batches';

/**
 * The transaction events' patch, with its reason. Every committed history replays (test/replay), so runs recorded
 * before it keep their branch.
 *
 * With more than MAX_ACCOUNTS_PER_BATCH accounts pending, new runs deliver them in consecutive batches of at most
 * that many (the first after the coalescing window, the rest at once), and continue as new only once at most one
 * batch is left, so callbacks and the carried snapshot stay bounded. Runs from before sent every pending account in
 * one callback. Asked only when it matters (more than one batch pending), so other histories are unchanged.
 */
export const BOUNDED_BATCHES_PATCH = 'transaction-events-bounded-batches';

/**
 * More than one batch pending, in a run under BOUNDED_BATCHES_PATCH: its batches go out back to back. False in runs
 * from before the patch: they send everything pending in one callback. patched() is asked only with a backlog.
 */
export function backlogInBatches(batches: TransactionBatches): boolean {
  return batches.hasBacklog() && patched(BOUNDED_BATCHES_PATCH);
}
