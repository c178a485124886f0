import { defineSignal } from '@temporalio/workflow';

/**
 * Worker Versioning, as the workflows see it (docs/deploying.md).
 *
 * Every workflow type is PINNED (the versioned worker's defaultVersioningBehavior: a per-type setWorkflowOptions
 * would be refused by the server on unversioned workers, which tests and pre-versioning setups run): a run executes
 * one build's code from its first task to its last, so a change to workflow code needs no patch for the runs
 * that start after Worker Versioning. The long-lived types (finance applications, transaction
 * events, late reports, consent claims) move to a new Current Version at their next safe point, by continuing as
 * new with AUTO_UPGRADE: the new run starts on the new build from the snapshot the old run hands over. The consent
 * refresh (bounded by its timeout, 10 minutes by default) finishes on the build it started on.
 */

/**
 * The deploy procedure's nudge: a run asleep (a long poll activity, a claim waiting for its release) sees a new
 * Current Version only at its next workflow task. This signal is that task: it records nothing, and the run
 * continues as new onto the new version at its safe point. Sent to every open run pinned to an older version
 * (`npm run deploy -- nudge`, or `temporal workflow signal --query ... --name upgradeCheck`).
 */
export const upgradeCheckSignal = defineSignal('upgradeCheck');
export const UPGRADE_CHECK_SIGNAL = 'upgradeCheck';
