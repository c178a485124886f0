import { temporal } from '@temporalio/proto';
import {
  activityOutcome,
  judgeTakeover,
  searchAttributeProblems,
  visibilityProblems,
  type PendingAtKill,
} from '../../cluster/checks';
import type { ApplicationRecord } from '../../src/sandbox/types';
import { SEARCH_ATTRIBUTE_NAMES } from '../../src/shared/search-attributes';

const { EventType, IndexedValueType } = temporal.api.enums.v1;
type Event = temporal.api.history.v1.IHistoryEvent;
/** A history event as the server sends it (ids as Long), from plain numbers. */
const event = (plain: Record<string, unknown>): Event => temporal.api.history.v1.HistoryEvent.fromObject(plain);

describe('searchAttributeProblems', () => {
  const all: Record<string, number | undefined> = {
    ...Object.fromEntries(SEARCH_ATTRIBUTE_NAMES.map((n) => [n, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
    FinanceApplicationCreatedAt: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  };

  test('every contract attribute with its type: no problem', () => {
    expect(searchAttributeProblems(all)).toEqual([]);
  });

  test('a missing attribute and one of another type are named', () => {
    const { RefreshTaskId: _missing, ...rest } = all;
    const problems = searchAttributeProblems({ ...rest, ConsentId: IndexedValueType.INDEXED_VALUE_TYPE_TEXT });
    expect(problems).toEqual([
      expect.stringContaining('ConsentId has type'),
      'search attribute RefreshTaskId is not registered',
    ]);
    expect(searchAttributeProblems({ ...all, FinanceApplicationCreatedAt: undefined })).toEqual([
      'search attribute FinanceApplicationCreatedAt is not registered',
    ]);
  });
});

const scheduled = (id: number, activityId: string): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    activityTaskScheduledEventAttributes: { activityId, activityType: { name: 'getApplicationStatus' } },
  });
const started = (id: number, scheduledEventId: number, identity: string, attempt: number): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
    activityTaskStartedEventAttributes: { scheduledEventId, identity, attempt },
  });
const completed = (id: number, scheduledEventId: number): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    activityTaskCompletedEventAttributes: { scheduledEventId },
  });
const canceled = (id: number, scheduledEventId: number): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    activityTaskCanceledEventAttributes: { scheduledEventId },
  });

describe('activityOutcome', () => {
  const history = [
    scheduled(5, '1'),
    scheduled(6, '2'),
    started(7, 6, 'w1', 1),
    completed(8, 6),
    started(9, 5, 'w2', 2),
    completed(10, 5),
    scheduled(11, '3'),
  ];

  test('the attempt recorded and the close, matched by the scheduled event', () => {
    expect(activityOutcome(history, '1')).toEqual({ identity: 'w2', attempt: 2, close: 'completed' });
    expect(activityOutcome(history, '2')).toEqual({ identity: 'w1', attempt: 1, close: 'completed' });
  });

  test('still open, or never scheduled', () => {
    expect(activityOutcome(history, '3')).toEqual({});
    expect(activityOutcome(history, '4')).toBeUndefined();
  });

  test('a cancellation is a close', () => {
    expect(activityOutcome([scheduled(5, '1'), canceled(6, 5)], '1')).toEqual({ close: 'canceled' });
  });
});

describe('judgeTakeover', () => {
  const pending = (activityId: string): PendingAtKill => ({
    workflowId: `wf-${activityId}`,
    runId: 'run',
    activityId,
    activityType: 'getApplicationStatus',
  });

  test('completed by another worker: taken over', () => {
    const v = judgeTakeover(
      'w1',
      [pending('1'), pending('2')],
      [{ close: 'completed', identity: 'w2', attempt: 2 }, { close: 'canceled' }],
    );
    expect(v).toEqual({ takenOver: 1, finishedBeforeKill: 0, closedOtherwise: 1, problems: [] });
  });

  test('an activity that never closed fails the run', () => {
    const v = judgeTakeover('w1', [pending('1'), pending('2')], [{ close: 'completed', identity: 'w2' }, {}]);
    expect(v.problems).toEqual([expect.stringContaining('never closed after w1 was killed')]);
  });

  test('no evidence of a takeover fails the run', () => {
    expect(judgeTakeover('w1', [], []).problems).toEqual(['w1 had no activity running when it was killed']);
    const v = judgeTakeover('w1', [pending('1')], [{ close: 'completed', identity: 'w1' }]);
    expect(v.finishedBeforeKill).toBe(1);
    expect(v.problems).toEqual(['no activity of w1 was completed by another worker']);
  });

  test('an activity missing from its history fails the run', () => {
    expect(judgeTakeover('w1', [pending('1')], [undefined]).problems[0]).toContain("not in its run's history");
  });
});

describe('visibilityProblems', () => {
  const bank = (ref: string, id: string, status: string) =>
    ({ financeApplicationId: id, status, createRequest: { merchantReference: ref } }) as unknown as ApplicationRecord;

  test('one closed workflow per reference with the bank id and final status: no problem', () => {
    const found = [{ workflowId: 'w', financeApplicationId: 'fa-1', status: 'COMPLETED', closed: true }];
    expect(visibilityProblems([bank('r1', 'fa-1', 'COMPLETED')], [{ merchantReference: 'r1', found }])).toEqual([]);
  });

  test('a status behind the bank, an open workflow, a missing or foreign id, none or two workflows', () => {
    const truth = [bank('r1', 'fa-1', 'COMPLETED'), bank('r2', 'fa-2', 'DECLINED')];
    const problems = visibilityProblems(truth, [
      {
        merchantReference: 'r1',
        found: [{ workflowId: 'w', financeApplicationId: 'fa-1', status: 'SIGNED', closed: false }],
      },
      { merchantReference: 'r2', found: [{ workflowId: 'w', financeApplicationId: 'fa-1', closed: true }] },
      { merchantReference: 'r3', found: [] },
    ]);
    expect(problems).toEqual([
      expect.stringContaining('FinanceApplicationStatus SIGNED, the bank says COMPLETED'),
      expect.stringContaining('the workflow is still open'),
      expect.stringContaining('FinanceApplicationId fa-1 is not the bank'),
      expect.stringContaining('0 workflows, expected 1'),
    ]);
  });
});
