import { temporal } from '@temporalio/proto';
import type { ApplicationRecord } from '../../src/sandbox/types';
import { contractSearchAttributeTypes } from '../../src/temporal/dev-server';

/**
 * The cluster run's own verdicts, pure so they are unit-tested (test/cluster/checks.test.ts); the run gathers
 * the evidence (the namespace's search attributes, workflow histories, visibility lists), these decide. The
 * comparison with the bank's ground truth is tools/chaos/truth.ts's, shared with `npm run chaos`.
 */

type IHistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;
const { IndexedValueType } = temporal.api.enums.v1;

/** Every contract search attribute with its type. */
const CONTRACT = Object.entries(contractSearchAttributeTypes()).map(
  ([name, type]): [name: string, type: 'Keyword' | 'Datetime'] => [
    name,
    type === IndexedValueType.INDEXED_VALUE_TYPE_DATETIME ? 'Datetime' : 'Keyword',
  ],
);

/** Contract search attributes missing from the namespace, or registered with another type than the contract's. */
export function searchAttributeProblems(custom: Record<string, number | string | null | undefined>): string[] {
  const problems: string[] = [];
  for (const [name, wanted] of CONTRACT) {
    const key = `INDEXED_VALUE_TYPE_${wanted.toUpperCase()}` as keyof typeof IndexedValueType;
    const type = custom[name];
    if (type === undefined || type === null) problems.push(`search attribute ${name} is not registered`);
    else if (type !== IndexedValueType[key] && type !== key) {
      problems.push(`search attribute ${name} has type ${String(type)}, not ${wanted}`);
    }
  }
  return problems;
}

/** An activity the killed worker had started (describe's pending activities, taken just before the kill). */
export interface PendingAtKill {
  workflowId: string;
  runId: string;
  activityId: string;
  activityType: string;
}

export type ActivityClose = 'completed' | 'failed' | 'timedOut' | 'canceled';

/** How an activity ended in a run's history: its final attempt's worker (the started event) and its close. */
export interface ActivityOutcome {
  close?: ActivityClose;
  /** Identity of the worker that ran the attempt the history records (the last one). */
  identity?: string;
  attempt?: number;
}

/** The outcome of the activity `activityId` in one run's history (undefined when it was never scheduled there). */
export function activityOutcome(events: IHistoryEvent[], activityId: string): ActivityOutcome | undefined {
  const scheduled = events.find(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityId === activityId,
  );
  if (!scheduled?.eventId) return undefined;
  const id = String(scheduled.eventId);
  const is = (v: { toString(): string } | null | undefined) => v != null && v.toString() === id;
  const outcome: ActivityOutcome = {};
  for (const e of events) {
    if (is(e.activityTaskStartedEventAttributes?.scheduledEventId)) {
      outcome.identity = e.activityTaskStartedEventAttributes!.identity ?? undefined;
      outcome.attempt = e.activityTaskStartedEventAttributes!.attempt ?? undefined;
    } else if (is(e.activityTaskCompletedEventAttributes?.scheduledEventId)) outcome.close = 'completed';
    else if (is(e.activityTaskFailedEventAttributes?.scheduledEventId)) outcome.close = 'failed';
    else if (is(e.activityTaskTimedOutEventAttributes?.scheduledEventId)) outcome.close = 'timedOut';
    else if (is(e.activityTaskCanceledEventAttributes?.scheduledEventId)) outcome.close = 'canceled';
  }
  return outcome;
}

export interface TakeoverVerdict {
  /** Activities of the killed worker that another worker ran to completion. */
  takenOver: number;
  /** Completed by the killed worker itself between the snapshot and the kill (no takeover needed). */
  finishedBeforeKill: number;
  /** Closed without completing (canceled by their workflow, or failed for good): not lost, not a takeover. */
  closedOtherwise: number;
  problems: string[];
}

/**
 * The killed worker's activities must all have closed, and at least one must have been completed by another
 * worker: without that, the run did not show a takeover (and fails rather than pass without evidence).
 */
export function judgeTakeover(
  killedIdentity: string,
  pending: PendingAtKill[],
  outcomes: (ActivityOutcome | undefined)[],
): TakeoverVerdict {
  const verdict: TakeoverVerdict = { takenOver: 0, finishedBeforeKill: 0, closedOtherwise: 0, problems: [] };
  pending.forEach((p, i) => {
    const o = outcomes[i];
    const what = `${p.activityType} (activity ${p.activityId}) of ${p.workflowId}`;
    if (!o) verdict.problems.push(`${what}: not in its run's history`);
    else if (!o.close) verdict.problems.push(`${what}: never closed after ${killedIdentity} was killed`);
    else if (o.close !== 'completed') verdict.closedOtherwise += 1;
    else if (o.identity === killedIdentity) verdict.finishedBeforeKill += 1;
    else verdict.takenOver += 1;
  });
  if (pending.length === 0) verdict.problems.push(`${killedIdentity} had no activity running when it was killed`);
  else if (verdict.takenOver === 0) {
    verdict.problems.push(`no activity of ${killedIdentity} was completed by another worker`);
  }
  return verdict;
}

/** What visibility (the SQL store, queried by search attribute) shows of one application. */
export interface VisibleApplication {
  merchantReference: string;
  /** Workflows found by `MerchantReference = '<ref>'`, with their search attributes. */
  found: { workflowId: string; financeApplicationId?: string; status?: string; closed: boolean }[];
}

/** Each reference's workflow is found by its MerchantReference, closed, with the bank's id and final status. */
export function visibilityProblems(bank: ApplicationRecord[], visible: VisibleApplication[]): string[] {
  const problems: string[] = [];
  for (const v of visible) {
    const truth = bank.filter((a) => a.createRequest.merchantReference === v.merchantReference);
    const where = `visibility, MerchantReference = '${v.merchantReference}'`;
    if (v.found.length !== 1) {
      problems.push(`${where}: ${v.found.length} workflows, expected 1`);
      continue;
    }
    const [wf] = v.found as [VisibleApplication['found'][number]];
    const match = truth.find((a) => a.financeApplicationId === wf.financeApplicationId);
    if (!match) {
      problems.push(`${where}: FinanceApplicationId ${wf.financeApplicationId ?? '(unset)'} is not the bank's`);
      continue;
    }
    if (wf.status !== match.status) {
      problems.push(`${where}: FinanceApplicationStatus ${wf.status ?? '(unset)'}, the bank says ${match.status}`);
    }
    if (!wf.closed) problems.push(`${where}: the workflow is still open`);
  }
  return problems;
}

// ---- the rolling upgrade (tools/cluster/upgrade.ts) ---------------------------------------------------------

/** One run of a workflow as the upgrade checks see it: visibility's row and the builds of its workflow tasks. */
export interface RunBuilds {
  workflowId: string;
  runId: string;
  workflowType: string;
  /** Visibility's status name: RUNNING, COMPLETED, CONTINUED_AS_NEW, FAILED, … */
  status: string;
  startMs: number;
  closeMs?: number;
  /** The build id of each WorkflowTaskCompleted, in order ('(none)': a task completed by an unversioned worker). */
  builds: string[];
}

/** The build id each WorkflowTaskCompleted of a history records (the SDK reports its deployment version). */
export function workflowTaskBuilds(events: IHistoryEvent[]): string[] {
  return events
    .map((e) => e.workflowTaskCompletedEventAttributes)
    .filter((a) => a != null)
    .map((a) => {
      const id = a.deploymentVersion?.buildId;
      if (id) return id;
      // Older servers report the version as `deployment.buildId` only.
      const joined = a.workerDeploymentVersion;
      return joined ? joined.slice(joined.indexOf('.') + 1) : '(none)';
    });
}

const buildsOf = (run: RunBuilds) => [...new Set(run.builds)];

/** Runs whose workflow tasks were completed by more than one build: code of two builds in one run. */
export function mixedBuildRuns(runs: RunBuilds[]): string[] {
  return runs
    .filter((r) => buildsOf(r).length > 1)
    .map((r) => `${r.workflowId} run ${r.runId}: workflow tasks from ${buildsOf(r).join(' and ')} in one run`);
}

/**
 * A workflow that had a run open on build `a` when `b` became current (at `switchMs`): its runs, oldest first, are
 * on `a` and then on `b`, and the first run on `b` began after the switch from a continue-as-new of the last run on
 * `a` (its safe point). With `stays` (a type that finishes on its build: the consent refresh) every run is on `a`
 * and closed. Returns what differs.
 */
export function judgeMove(
  runs: RunBuilds[],
  versions: { a: string; b: string },
  switchMs: number,
  stays = false,
): string[] {
  const sorted = [...runs].sort((x, y) => x.startMs - y.startMs);
  const id = sorted[0]?.workflowId ?? '?';
  const on = (r: RunBuilds, build: string) => r.builds.length > 0 && r.builds.every((b) => b === build);
  if (sorted.length === 0) return [`${id}: no run found`];
  if (stays) {
    const problems = sorted
      .filter((r) => !on(r, versions.a))
      .map((r) => `${id} run ${r.runId}: not on ${versions.a} alone (${buildsOf(r).join(', ') || 'no task'})`);
    const last = sorted[sorted.length - 1]!;
    if (last.status !== 'COMPLETED')
      problems.push(`${id}: ${last.status.toLowerCase()} on ${versions.a}, not completed`);
    return problems;
  }
  const firstB = sorted.findIndex((r) => on(r, versions.b));
  if (firstB < 0)
    return [
      `${id}: never moved to ${versions.b} (runs on ${sorted.map((r) => buildsOf(r).join('+') || 'none').join(', ')})`,
    ];
  const problems: string[] = [];
  sorted.slice(0, firstB).forEach((r) => {
    if (!on(r, versions.a))
      problems.push(
        `${id} run ${r.runId}: before the move, yet not on ${versions.a} alone (${buildsOf(r).join(', ') || 'no task'})`,
      );
  });
  sorted.slice(firstB).forEach((r) => {
    if (!on(r, versions.b))
      problems.push(
        `${id} run ${r.runId}: after the move, yet not on ${versions.b} alone (${buildsOf(r).join(', ') || 'no task'})`,
      );
  });
  const lastA = sorted[firstB - 1];
  if (!lastA) problems.push(`${id}: its first run is on ${versions.b}, it was not open on ${versions.a}`);
  else if (lastA.status !== 'CONTINUED_AS_NEW') {
    problems.push(`${id}: its last run on ${versions.a} ended ${lastA.status.toLowerCase()}, not by continue-as-new`);
  } else if ((lastA.closeMs ?? 0) < switchMs) {
    problems.push(`${id}: its last run on ${versions.a} continued as new before ${versions.b} was current`);
  }
  return problems;
}

/** Runs the harness started after the switch: every one on `b` alone. */
export function judgeNewRuns(runs: RunBuilds[], b: string): string[] {
  return runs
    .filter((r) => r.builds.length === 0 || r.builds.some((x) => x !== b))
    .map((r) => `${r.workflowId} run ${r.runId}: started after the switch, on ${buildsOf(r).join(', ') || 'no build'}`);
}

/**
 * The safe point, as the old run's history shows it: it continued as new in a workflow task that saw the new
 * version (WorkflowTaskStarted.targetWorkerDeploymentVersionChanged), with every accepted update (a long-poll, a
 * start) completed first.
 */
export function safePointProblems(events: IHistoryEvent[]): string[] {
  const problems: string[] = [];
  const accepted = new Map<string, string>();
  const completed = new Set<string>();
  let sawNewVersion = false;
  for (const e of events) {
    const acc = e.workflowExecutionUpdateAcceptedEventAttributes;
    if (acc?.protocolInstanceId) accepted.set(acc.protocolInstanceId, acc.acceptedRequest?.input?.name ?? '?');
    const done = e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId;
    if (done) completed.add(done);
    if (e.workflowTaskStartedEventAttributes?.targetWorkerDeploymentVersionChanged) sawNewVersion = true;
    if (e.workflowExecutionContinuedAsNewEventAttributes) {
      for (const [id, name] of accepted) {
        if (!completed.has(id)) problems.push(`update ${name} (${id}) still open when the run continued as new`);
      }
      if (!sawNewVersion) problems.push('continued as new without a workflow task that saw the new version');
    }
  }
  return problems;
}

/**
 * What a move costs in history events: the old run's events from its first workflow task that saw the new version
 * (with the nudge signal that woke it, when that came just before) to its continue-as-new, plus the new run's
 * events up to its first completed workflow task. Undefined when the old run never saw the new version.
 */
export function moveEvents(
  oldEvents: IHistoryEvent[],
  newEvents: IHistoryEvent[],
  nudgeSignal: string,
): number | undefined {
  const started = oldEvents.findIndex(
    (e) => e.workflowTaskStartedEventAttributes?.targetWorkerDeploymentVersionChanged,
  );
  if (started < 0) return undefined;
  let from = started;
  if (oldEvents[from - 1]?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) from -= 1;
  if (oldEvents[from - 1]?.workflowExecutionSignaledEventAttributes?.signalName === nudgeSignal) from -= 1;
  const firstTask = newEvents.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  return oldEvents.length - from + (firstTask < 0 ? newEvents.length : firstTask + 1);
}

/**
 * Status webhooks the bank saw answered 202 (the receiver handed them to the workflow) whose status never entered
 * the application's history. Only meaningful when each change waited until the product showed the previous one.
 */
export function acknowledgedChangesMissing(bank: ApplicationRecord, history: { status: string }[]): string[] {
  const seen = new Set(history.map((h) => h.status));
  const missing = bank.webhooks
    .filter((d) => d.trigger.startsWith('status:') && d.attempts.some((a) => a.status === 202))
    .map((d) => d.trigger.slice('status:'.length))
    .filter((status) => !seen.has(status));
  return [...new Set(missing)].map(
    (status) =>
      `${String(bank.createRequest.merchantReference)}: the webhook for ${status} was answered 202, the history never had it`,
  );
}
