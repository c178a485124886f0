import type { Priority } from '@temporalio/common';

/**
 * Bank status reads (webhook-triggered reads and polls) run on a task queue of their own, so one ceiling on
 * them holds across every worker (Temporal's task-queue activity rate limit, BANK_MAX_READS_PER_SECOND):
 * thousands of polls falling due at once, after a worker outage for example, queue at Temporal instead of
 * reaching the bank together. Creates and refresh starts stay on the main queue: one per merchant request.
 */
export const bankReadsTaskQueue = (taskQueue: string): string => `${taskQueue}-bank-reads`;

/**
 * The activities a bank-reads worker registers (and the only ones workflows schedule on that queue); that each is
 * an activity is checked where the activities are typed (src/activities/types.ts).
 */
export const BANK_READ_ACTIVITIES = ['getApplicationStatus', 'pollApplicationStatus'] as const;

/**
 * The priority of every activity a workflow schedules on the bank-reads queue: Temporal's task-queue fairness
 * dispatches a backlog there in turn by key, so each merchant gets an equal share of the read ceiling whatever
 * another merchant asks (docs/merchant-api.md, "Budgets"). Needs fairness on in the server's dynamic config
 * (matching.enableFairness, src/temporal/dev-server.ts). Merchant ids are at most 64 bytes: the key's limit.
 */
export function bankReadPriority(merchantId: string): Priority {
  return { fairnessKey: merchantId, fairnessWeight: 1 };
}
