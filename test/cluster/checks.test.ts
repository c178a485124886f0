import { temporal } from '@temporalio/proto';
import {
  acknowledgedChangesMissing,
  activityOutcome,
  judgeMove,
  judgeNewRuns,
  judgeTakeover,
  mixedBuildRuns,
  moveEvents,
  safePointProblems,
  searchAttributeProblems,
  visibilityProblems,
  workflowTaskBuilds,
  type PendingAtKill,
  type RunBuilds,
} from '../../tools/cluster/checks';
import { judgeFailingGate, judgePassingGate, type GateRun } from '../../tools/cluster/replay-gate';
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

// ---- the rolling upgrade -------------------------------------------------------------------------------------

const taskCompleted = (id: number, buildId?: string): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    workflowTaskCompletedEventAttributes: buildId ? { deploymentVersion: { deploymentName: 'paylater', buildId } } : {},
  });
const taskScheduled = (id: number): Event =>
  event({ eventId: id, eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED });
const taskStarted = (id: number, targetChanged = false): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    workflowTaskStartedEventAttributes: { targetWorkerDeploymentVersionChanged: targetChanged },
  });
const signaled = (id: number, signalName: string): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    workflowExecutionSignaledEventAttributes: { signalName },
  });
const updateAccepted = (id: number, updateId: string): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    workflowExecutionUpdateAcceptedEventAttributes: {
      protocolInstanceId: updateId,
      acceptedRequest: { input: { name: 'waitForStatusChange' } },
    },
  });
const updateCompleted = (id: number, updateId: string): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
    workflowExecutionUpdateCompletedEventAttributes: { meta: { updateId } },
  });
const continuedAsNew = (id: number): Event =>
  event({
    eventId: id,
    eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    workflowExecutionContinuedAsNewEventAttributes: {},
  });
const executionStarted = (id: number): Event =>
  event({ eventId: id, eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED });

describe('workflowTaskBuilds', () => {
  test("each completed workflow task's build, the older joined form, and none for an unversioned worker", () => {
    const joined = event({
      eventId: 9,
      eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      workflowTaskCompletedEventAttributes: { workerDeploymentVersion: 'paylater.wf-b' },
    });
    expect(workflowTaskBuilds([taskCompleted(4, 'wf-a'), taskScheduled(5), taskCompleted(7), joined])).toEqual([
      'wf-a',
      '(none)',
      'wf-b',
    ]);
  });
});

const run = (over: Partial<RunBuilds> & Pick<RunBuilds, 'runId' | 'builds'>): RunBuilds => ({
  workflowId: 'wf-1',
  workflowType: 'financeApplicationWorkflow',
  status: 'COMPLETED',
  startMs: 0,
  ...over,
});
const versions = { a: 'wf-a', b: 'wf-b' };
const SWITCH = 1_000;

describe('mixedBuildRuns', () => {
  test('a run with the tasks of two builds is named; one build per run is fine', () => {
    expect(
      mixedBuildRuns([run({ runId: 'r1', builds: ['wf-a', 'wf-a'] }), run({ runId: 'r2', builds: ['wf-b'] })]),
    ).toEqual([]);
    expect(mixedBuildRuns([run({ runId: 'r3', builds: ['wf-a', 'wf-b'] })])).toEqual([
      'wf-1 run r3: workflow tasks from wf-a and wf-b in one run',
    ]);
  });
});

describe('judgeMove', () => {
  const moved = [
    run({ runId: 'r2', builds: ['wf-b', 'wf-b'], startMs: 1_500 }),
    run({ runId: 'r1', builds: ['wf-a', 'wf-a'], status: 'CONTINUED_AS_NEW', closeMs: 1_500 }),
  ];

  test("A's runs, a continue-as-new after the switch, then B's: no problem", () => {
    expect(judgeMove(moved, versions, SWITCH)).toEqual([]);
  });

  test('a run that never moved, or ended otherwise on A, or moved before B was current', () => {
    expect(judgeMove([run({ runId: 'r1', builds: ['wf-a'], status: 'RUNNING' })], versions, SWITCH)).toEqual([
      'wf-1: never moved to wf-b (runs on wf-a)',
    ]);
    const early = [{ ...moved[1]!, closeMs: 900 }, moved[0]!];
    expect(judgeMove(early, versions, SWITCH)).toEqual([
      'wf-1: its last run on wf-a continued as new before wf-b was current',
    ]);
    const completed = [{ ...moved[1]!, status: 'COMPLETED' }, moved[0]!];
    expect(judgeMove(completed, versions, SWITCH)).toEqual([
      'wf-1: its last run on wf-a ended completed, not by continue-as-new',
    ]);
  });

  test('a run of the wrong build on either side of the move, and a workflow that was never on A', () => {
    const mixedAfter = [
      moved[1]!,
      run({ runId: 'r2', builds: ['wf-b'], startMs: 1_500 }),
      run({ runId: 'r3', builds: ['wf-a'], startMs: 2_000 }),
    ];
    expect(judgeMove(mixedAfter, versions, SWITCH)).toEqual([
      'wf-1 run r3: after the move, yet not on wf-b alone (wf-a)',
    ]);
    expect(judgeMove([moved[0]!], versions, SWITCH)).toEqual([
      'wf-1: its first run is on wf-b, it was not open on wf-a',
    ]);
    expect(judgeMove([], versions, SWITCH)).toEqual(['?: no run found']);
  });

  test('a type that stays (the consent refresh): every run on A and completed', () => {
    expect(judgeMove([run({ runId: 'r1', builds: ['wf-a'] })], versions, SWITCH, true)).toEqual([]);
    expect(
      judgeMove([run({ runId: 'r1', builds: ['wf-a', 'wf-b'], status: 'RUNNING' })], versions, SWITCH, true),
    ).toEqual(['wf-1 run r1: not on wf-a alone (wf-a, wf-b)', 'wf-1: running on wf-a, not completed']);
  });
});

describe('judgeNewRuns', () => {
  test('runs started after the switch: on B alone, a task on A or none at all is named', () => {
    expect(judgeNewRuns([run({ runId: 'r1', builds: ['wf-b'] })], 'wf-b')).toEqual([]);
    expect(
      judgeNewRuns([run({ runId: 'r1', builds: ['wf-b', 'wf-a'] }), run({ runId: 'r2', builds: [] })], 'wf-b'),
    ).toEqual([
      'wf-1 run r1: started after the switch, on wf-b, wf-a',
      'wf-1 run r2: started after the switch, on no build',
    ]);
  });
});

describe('safePointProblems', () => {
  test('continued as new in a task that saw the new version, its long-poll answered first: no problem', () => {
    const events = [
      updateAccepted(5, 'u1'),
      signaled(8, 'upgradeCheck'),
      taskScheduled(9),
      taskStarted(10, true),
      updateCompleted(12, 'u1'),
      continuedAsNew(13),
    ];
    expect(safePointProblems(events)).toEqual([]);
  });

  test('an update still open at the continue-as-new, or a continue-as-new not for the new version', () => {
    expect(safePointProblems([updateAccepted(5, 'u1'), taskStarted(10, true), continuedAsNew(13)])).toEqual([
      'update waitForStatusChange (u1) still open when the run continued as new',
    ]);
    expect(safePointProblems([taskStarted(10), continuedAsNew(13)])).toEqual([
      'continued as new without a workflow task that saw the new version',
    ]);
  });
});

describe('moveEvents', () => {
  test("the old run's tail from the nudge and the new run's first workflow task", () => {
    const old = [
      executionStarted(1),
      taskScheduled(2),
      taskStarted(3),
      taskCompleted(4, 'wf-a'),
      signaled(5, 'upgradeCheck'),
      taskScheduled(6),
      taskStarted(7, true),
      taskCompleted(8, 'wf-a'),
      continuedAsNew(9),
    ];
    const next = [executionStarted(1), taskScheduled(2), taskStarted(3), taskCompleted(4, 'wf-b'), taskScheduled(5)];
    expect(moveEvents(old, next, 'upgradeCheck')).toBe(5 + 4);
    // Woken by its own task (no nudge just before): from that task's scheduling.
    const own = [
      executionStarted(1),
      taskScheduled(6),
      taskStarted(7, true),
      taskCompleted(8, 'wf-a'),
      continuedAsNew(9),
    ];
    expect(moveEvents(own, next, 'upgradeCheck')).toBe(4 + 4);
    expect(moveEvents([executionStarted(1), taskStarted(2)], next, 'upgradeCheck')).toBeUndefined();
  });
});

describe('acknowledgedChangesMissing', () => {
  const delivery = (status: string, answer: number) => ({
    trigger: `status:${status}`,
    attempts: [{ status: answer }],
  });
  const bank = {
    createRequest: { merchantReference: 'r1' },
    webhooks: [
      delivery('IN_PROGRESS', 202),
      delivery('APPROVED', 202),
      delivery('SIGNED', 503),
      delivery('COMPLETED', 200),
    ],
  } as unknown as ApplicationRecord;

  test('a status whose webhook was answered 202 but never recorded is named; others are not asked for', () => {
    expect(acknowledgedChangesMissing(bank, [{ status: 'IN_PROGRESS' }, { status: 'APPROVED' }])).toEqual([]);
    expect(acknowledgedChangesMissing(bank, [{ status: 'IN_PROGRESS' }, { status: 'COMPLETED' }])).toEqual([
      'r1: the webhook for APPROVED was answered 202, the history never had it',
    ]);
  });
});

describe('the replay gate verdicts', () => {
  const report = (failures: { workflowId: string; workflowType: string }[], replayed: number) => ({
    types: [{ workflowType: 'financeApplicationWorkflow', replayed, failed: failures.length }],
    staysOn: [{ version: 'paylater.wf-a', runs: 3 }],
    failures: failures.map((f) => ({ ...f, runId: 'r', error: { name: 'DeterminismViolationError', message: 'x' } })),
  });
  const gate = (code: number | null, r?: ReturnType<typeof report>): GateRun => ({ code, report: r, args: [] });

  test('a missing tool is a skip, not a failure', () => {
    expect(judgePassingGate('g', { missing: true }, 1)).toEqual({ summary: 'g: skipped (tool missing)', problems: [] });
    expect(judgeFailingGate('g', { missing: true }, ['x'], 't')).toEqual({
      summary: 'g: skipped (tool missing)',
      problems: [],
    });
  });

  test('passing: exit 0 with enough runs replayed', () => {
    expect(judgePassingGate('g', gate(0, report([], 4)), 4)).toEqual({
      summary: 'g: exit 0, 4 run(s) replayed, 3 stay on other builds',
      problems: [],
    });
    expect(judgePassingGate('g', gate(0, report([], 0)), 1).problems).toEqual([
      'g replayed 0 run(s), expected at least 1',
    ]);
    expect(judgePassingGate('g', gate(2), 0).problems).toEqual(['g exited 2, expected 0']);
    expect(judgePassingGate('g', gate(1, report([{ workflowId: 'w1', workflowType: 't' }], 1)), 0).problems).toEqual([
      'g exited 1, expected 0: w1 (DeterminismViolationError)',
    ]);
  });

  test('failing: exit 1 naming every expected workflow, and none of another type', () => {
    const t = 'financeApplicationWorkflow';
    const named = report(
      [
        { workflowId: 'w1', workflowType: t },
        { workflowId: 'w2', workflowType: t },
      ],
      2,
    );
    expect(judgeFailingGate('g', gate(1, named), ['w1', 'w2'], t).problems).toEqual([]);
    expect(judgeFailingGate('g', gate(1, named), ['w1', 'w3'], t).problems).toEqual([
      'g did not name 1 workflow(s): w3',
    ]);
    expect(judgeFailingGate('g', gate(0, report([], 2)), ['w1'], t).problems).toEqual([
      'g exited 0, expected 1',
      'g did not name 1 workflow(s): w1',
    ]);
    const other = report([{ workflowId: 'c1', workflowType: 'consentClaimWorkflow' }], 1);
    expect(judgeFailingGate('g', gate(1, other), [], t).problems).toEqual([
      'g failed workflows it does not change: c1 (consentClaimWorkflow)',
    ]);
  });
});
