import type { Activities } from '../activities/types';

/**
 * Bank status reads (webhook-triggered reads and polls) run on a task queue of their own, so one ceiling on
 * them holds across every worker (Temporal's task-queue activity rate limit, BANK_MAX_READS_PER_SECOND):
 * thousands of polls falling due at once, after a worker outage for example, queue at Temporal instead of
 * reaching the bank together. Creates and refresh starts stay on the main queue: one per merchant request.
 */
export const bankReadsTaskQueue = (taskQueue: string): string => `${taskQueue}-bank-reads`;

/** The activities a bank-reads worker registers (and the only ones workflows schedule on that queue). */
export const BANK_READ_ACTIVITIES = [
  'getApplicationStatus',
  'pollApplicationStatus',
] as const satisfies readonly (keyof Activities)[];
