import { proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/types';
import { bankReadPriority, bankReadsTaskQueue } from '../../shared/task-queues';
import {
  BANK_ACTIVITY_OPTIONS,
  CALLBACK_CHECK_OPTIONS,
  CONFIRMATION_READ_OPTIONS,
  MERCHANT_CALLBACK_ACTIVITY_OPTIONS,
  POLL_ACTIVITY_OPTIONS,
} from '../activity-options';

/**
 * The finance application's activities, each with a summary the Web UI shows on the event (a proxy is cheap to
 * build per call). Status reads go to the rate-limited bank-reads task queue (src/shared/task-queues.ts), each under
 * its merchant's fairness key: a merchant's share of the read ceiling (options of a command, not commands: no patch).
 */

/** Workflow time (deterministic in the sandbox); Date.now is linted out of workflow code. */
export const now = (): number => new Date().getTime();

/** Create, and the reads of runs from before the poll policy (main task queue, as their histories have it). */
export const bank = (summary: string) => proxyActivities<Activities>({ ...BANK_ACTIVITY_OPTIONS, summary });

export const merchant = (summary: string) =>
  proxyActivities<Activities>({ ...MERCHANT_CALLBACK_ACTIVITY_OPTIONS, summary });

/** The callback allow-list is in the worker's environment: the workflow learns the verdict from a local activity. */
export const { checkCallbackUrl } = proxyLocalActivities<Activities>(CALLBACK_CHECK_OPTIONS);

/** A read of our application after a webhook. */
export const reads = (summary: string, merchantId: string) =>
  proxyActivities<Activities>({
    ...BANK_ACTIVITY_OPTIONS,
    taskQueue: bankReadsTaskQueue(workflowInfo().taskQueue),
    priority: bankReadPriority(merchantId),
    summary,
  });

/** A read of another application's id, to confirm it exists (shorter retries than our own reads). */
export const confirmations = (merchantId: string) =>
  proxyActivities<Activities>({
    ...CONFIRMATION_READ_OPTIONS,
    taskQueue: bankReadsTaskQueue(workflowInfo().taskQueue),
    priority: bankReadPriority(merchantId),
    summary: 'Confirm another application at the bank',
  });

/** The polling activity: its retries, which Temporal schedules by the poll policy, are the polls. */
export const poller = (merchantId: string) =>
  proxyActivities<Activities>({
    ...POLL_ACTIVITY_OPTIONS,
    taskQueue: bankReadsTaskQueue(workflowInfo().taskQueue),
    priority: bankReadPriority(merchantId),
    summary: 'Poll status (retries are the polls)',
  });
