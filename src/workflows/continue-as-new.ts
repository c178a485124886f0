import type { WorkflowInfo } from '@temporalio/workflow';

/**
 * When a long-lived run continues as new, and how (plain code; the workflows ask it at their safe points).
 *
 * The safe point is the workflow's own: at the top of its loop, with no command in flight that the new run would
 * not take over. There the workflow (1) asks continueAsNewReason; if one is given, (2) refuses new status waits
 * (they are asked again of the next run) and answers the waiting ones `closing`, (3) waits for every handler to
 * finish (allHandlersFinished: an update in progress completes, a signal being handled is recorded), and only then
 * (4) continues as new with CONTINUE_AS_NEW_VERSIONING. So an upgrade never loses a signal (a signal that arrives
 * after (3) is delivered to the new run by the server), an update, or a waiting long-poll.
 */

export type ContinueAsNewReason =
  /** A new Current (or Ramping) Version of the Worker Deployment: move to it. */
  | 'new-version'
  /** The server suggests it (history size or length). */
  | 'suggested'
  /** The workflow's own bound on events per run (settings.continueAsNewAfterEvents). */
  | 'history-length';

export type RunInfo = Pick<
  WorkflowInfo,
  'targetWorkerDeploymentVersionChanged' | 'continueAsNewSuggested' | 'historyLength'
>;

/** Whether the run should continue as new at this safe point, and why; undefined: go on. */
export function continueAsNewReason(info: RunInfo, historyLimit?: number): ContinueAsNewReason | undefined {
  // First: a run that moves anyway also resets its history, so the version is the reason reported.
  if (info.targetWorkerDeploymentVersionChanged) return 'new-version';
  if (info.continueAsNewSuggested) return 'suggested';
  if (historyLimit !== undefined && info.historyLength >= historyLimit) return 'history-length';
  return undefined;
}

/**
 * Every continue-as-new of a pinned run lands on the deployment's target version (the current one, or the ramping
 * one for the ramp's share): a continue-as-new for history length with no new version lands on the same build.
 * Unversioned runs (workers without a deployment) ignore it.
 */
export const CONTINUE_AS_NEW_VERSIONING = { initialVersioningBehavior: 'AUTO_UPGRADE' } as const;
