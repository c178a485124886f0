import { temporal } from '@temporalio/proto';
import type { ApplicationRecord } from '../src/sandbox/types';
import { contractSearchAttributeTypes } from '../src/temporal/dev-server';

/**
 * The cluster run's own verdicts, pure so they are unit-tested (test/cluster/checks.test.ts); the run gathers
 * the evidence (the namespace's search attributes, workflow histories, visibility lists), these decide. The
 * comparison with the bank's ground truth is chaos/truth.ts's, shared with `npm run chaos`.
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
