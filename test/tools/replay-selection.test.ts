import {
  exitCodeOf,
  failureSummary,
  formatReport,
  isReplayed,
  listQueries,
  parseDeploymentVersion,
  parseReplayCheckArgs,
  placementOf,
  REPLAY_CHECK_DEFAULTS,
  RunSample,
  UsageError,
  type ListedRun,
  type ReplayReport,
} from '../../src/tools/replay-selection';

/** The replay gate's plain decisions (src/tools/replay-selection.ts); test/tools/replay-check.test.ts runs it whole. */
describe('replay-check arguments', () => {
  it('defaults to a 24h window, 50 runs per type, this build, pinned runs elsewhere skipped', () => {
    expect(parseReplayCheckArgs([])).toEqual({
      sinceMs: 24 * 3_600_000,
      sample: 50,
      all: false,
      concurrency: 4,
      json: false,
      help: false,
    });
    expect(REPLAY_CHECK_DEFAULTS).toEqual({ sinceMs: 86_400_000, sample: 50, concurrency: 4 });
  });

  it('reads every option, with a space or an equals sign', () => {
    expect(
      parseReplayCheckArgs([
        '--since',
        '7d',
        '--sample=5',
        '--bundle',
        'candidate/dist/workflow-bundle.js',
        '--build-id=wf-0123456789abcdef',
        '--all',
        '--concurrency',
        '8',
        '--json',
      ]),
    ).toEqual({
      sinceMs: 7 * 86_400_000,
      sample: 5,
      bundle: 'candidate/dist/workflow-bundle.js',
      buildId: 'wf-0123456789abcdef',
      all: true,
      concurrency: 8,
      json: true,
      help: false,
    });
    expect(parseReplayCheckArgs(['--since', '0']).sinceMs).toBe(0);
    expect(parseReplayCheckArgs(['--since=90m']).sinceMs).toBe(90 * 60_000);
    expect(parseReplayCheckArgs(['--help']).help).toBe(true);
    expect(parseReplayCheckArgs(['-h']).help).toBe(true);
  });

  it.each([
    [['--sample', '0'], '--sample must be a whole number from 1 to 10000 (got "0")'],
    [['--sample', '2.5'], '--sample must be a whole number from 1 to 10000'],
    [['--sample', '10001'], '--sample must be a whole number from 1 to 10000'],
    [['--concurrency', '0'], '--concurrency must be a whole number from 1 to 32'],
    [['--since', 'yesterday'], '--since must be a duration such as 30m, 24h or 7d'],
    [['--since', '400d'], 'at most 365d'],
    [['--since'], '--since needs a value'],
    [['--sample', '--all'], '--sample needs a value'],
    [['--all=yes'], '--all takes no value'],
    [['--bundle='], '--bundle needs a path'],
    [['--build-id', 'has space'], '--build-id must be 1 to 255 characters without spaces'],
    [['--build-id', 'x'.repeat(256)], '--build-id must be 1 to 255 characters without spaces'],
    [['--types', 'x'], 'unknown argument "--types"'],
    [['extra'], 'unknown argument "extra"'],
  ])('refuses a bad command line (%#)', (argv, message) => {
    expect(() => parseReplayCheckArgs(argv)).toThrow(UsageError);
    expect(() => parseReplayCheckArgs(argv)).toThrow(message);
  });
});

describe('which runs the checked build would execute', () => {
  const checked = { deploymentName: 'paylater', buildId: 'wf-new' };

  it('reads the search attribute form of a version (name:buildId)', () => {
    expect(parseDeploymentVersion('paylater:wf-abc')).toEqual({ deploymentName: 'paylater', buildId: 'wf-abc' });
    expect(parseDeploymentVersion('paylater:wf:with:colons')).toEqual({
      deploymentName: 'paylater',
      buildId: 'wf:with:colons',
    });
    for (const text of [undefined, '', 'paylater', ':wf-abc', 'paylater:'])
      expect(parseDeploymentVersion(text)).toBe(undefined);
  });

  it('replays unversioned runs, auto-upgrade runs and runs pinned to the checked build; not runs pinned elsewhere', () => {
    const cases = [
      [{}, { kind: 'unversioned' }, true],
      [{ deploymentVersion: 'paylater:wf-old' }, { kind: 'unversioned' }, true],
      [{ behavior: 'AutoUpgrade', deploymentVersion: 'paylater:wf-old' }, { kind: 'auto-upgrade' }, true],
      [
        { behavior: 'Pinned', deploymentVersion: 'paylater:wf-new' },
        { kind: 'pinned', version: checked, here: true },
        true,
      ],
      [
        { behavior: 'Pinned', deploymentVersion: 'paylater:wf-old' },
        { kind: 'pinned', version: { deploymentName: 'paylater', buildId: 'wf-old' }, here: false },
        false,
      ],
      // The same build id in another deployment is another version.
      [
        { behavior: 'Pinned', deploymentVersion: 'other:wf-new' },
        { kind: 'pinned', version: { deploymentName: 'other', buildId: 'wf-new' }, here: false },
        false,
      ],
      // Pinned without a readable version: nothing says where it stays, so it is checked.
      [{ behavior: 'Pinned' }, { kind: 'unversioned' }, true],
    ] as const;
    for (const [attributes, placement, replayed] of cases) {
      expect(placementOf(attributes, checked)).toEqual(placement);
      expect(isReplayed(placementOf(attributes, checked), false)).toBe(replayed);
      // --all: every run.
      expect(isReplayed(placementOf(attributes, checked), true)).toBe(true);
    }
  });

  it('lists open runs, and closed ones since the window start, of the task queue', () => {
    const since = new Date('2026-01-02T03:04:05.000Z');
    expect(listQueries('paylater', since)).toEqual({
      open: "TaskQueue = 'paylater' AND ExecutionStatus = 'Running'",
      closed: "TaskQueue = 'paylater' AND ExecutionStatus != 'Running' AND CloseTime >= '2026-01-02T03:04:05.000Z'",
    });
    expect(listQueries('paylater', undefined)).toEqual({
      open: "TaskQueue = 'paylater' AND ExecutionStatus = 'Running'",
    });
    expect(() => listQueries("pay'later", since)).toThrow(UsageError);
  });
});

describe('the sample of a workflow type', () => {
  const run = (id: string, open: boolean, startTime: number, closeTime?: number): ListedRun => ({
    workflowId: id,
    runId: `${id}-run`,
    workflowType: 't',
    open,
    startTime,
    closeTime,
  });

  it('takes the oldest open runs first, then the newest closed ones', () => {
    const sample = new RunSample(4);
    for (const r of [
      run('closed-old', false, 1, 10),
      run('open-new', true, 50),
      run('closed-new', false, 2, 90),
      run('open-old', true, 5),
      run('closed-mid', false, 3, 40),
    ])
      sample.offer(r);
    expect(sample.runs().map((r) => r.workflowId)).toEqual(['open-old', 'open-new', 'closed-new', 'closed-mid']);
  });

  it('holds a bounded number of runs however many are offered, and keeps the right ones', () => {
    const sample = new RunSample(3);
    let most = 0;
    // Open runs listed newest first (as SQL visibility lists them): the oldest come last.
    for (let i = 10_000; i > 0; i--) {
      sample.offer(run(`open-${i}`, true, i));
      most = Math.max(most, (sample as unknown as { held: ListedRun[] }).held.length);
    }
    expect(most).toBeLessThan(6);
    expect(sample.runs().map((r) => r.workflowId)).toEqual(['open-1', 'open-2', 'open-3']);
  });

  it('is empty when nothing is offered', () => {
    expect(new RunSample(5).runs()).toEqual([]);
  });
});

describe("a replay error's summary", () => {
  // As the SDK words them (seen from the replay of a finance application against a bundle with an extra timer).
  const nondeterminism =
    'Replay failed with a nondeterminism error. This means that the workflow code as written is not compatible with ' +
    'the history that was fed in. Details: Workflow activation completion failed: Failure { failure: Some(Failure { ' +
    'message: "[TMPRL1100] Nondeterminism error: Timer machine does not handle this event: HistoryEvent(id: 5, ' +
    'WorkflowExecutionUpdateAccepted)", source: "", stack_trace: "", encoded_attributes: None, cause: None }), ' +
    'force_cause: NonDeterministicError }';
  const encoded =
    'Replay failed due workflow task failure. Details: Workflow activation completion failed: Failure { failure: ' +
    'Some(Failure { message: "Encoded failure", source: "TypeScriptSDK", stack_trace: "", encoded_attributes: ' +
    'Some([Bp6n..68Yr]), cause: None, failure_info: None }), force_cause: Unspecified }';

  it("is core's message inside the SDK's wrapping", () => {
    expect(failureSummary(nondeterminism)).toBe(
      '[TMPRL1100] Nondeterminism error: Timer machine does not handle this event: HistoryEvent(id: 5, WorkflowExecutionUpdateAccepted)',
    );
    expect(failureSummary(nondeterminism, 'ignored: not an encoded failure')).toMatch(/^\[TMPRL1100\]/);
  });

  it('is the message the replayer encrypted, for an encoded failure; its first line only', () => {
    expect(failureSummary(encoded, "Failed to initialize workflow of type 'x'\n    at stack")).toBe(
      "Failed to initialize workflow of type 'x'",
    );
    expect(failureSummary(encoded)).toBe('Encoded failure');
  });

  it('is the first line of any other message, escapes read', () => {
    expect(failureSummary('something else\nsecond line')).toBe('something else');
    expect(failureSummary('x: Failure { message: "a \\"quoted\\" word\\nand more" }')).toBe('a "quoted" word');
  });
});

describe('the report', () => {
  const report = (over: Partial<ReplayReport> = {}): ReplayReport => ({
    address: '127.0.0.1:7233',
    namespace: 'default',
    taskQueue: 'paylater',
    bundle: 'dist/workflow-bundle.js',
    build: 'paylater.wf-new',
    closedSince: '2026-01-01T00:00:00.000Z',
    sample: 50,
    all: false,
    types: [
      {
        workflowType: 'financeApplicationWorkflow',
        listed: 120,
        replayed: 50,
        passed: 49,
        failed: 1,
        pinnedElsewhere: 12,
        notSampled: 58,
        gone: 0,
      },
    ],
    staysOn: [{ version: 'paylater.wf-old', runs: 12, workflowTypes: { financeApplicationWorkflow: 12 } }],
    failures: [
      {
        workflowId: 'fa:shop:r-1',
        runId: 'run-1',
        workflowType: 'financeApplicationWorkflow',
        error: { name: 'DeterminismViolationError', message: 'Nondeterminism error: timer 1 ...' },
      },
    ],
    listingCapped: false,
    ok: false,
    ...over,
  });

  it('has a line per workflow type, the runs staying on other builds, and each failure; exit 1', () => {
    const text = formatReport(report());
    expect(text).toContain('financeApplicationWorkflow     120        50      49       1                12');
    expect(text).toContain('stays on paylater.wf-old: 12 run(s) (financeApplicationWorkflow 12)');
    expect(text).toContain(
      'FAILED financeApplicationWorkflow fa:shop:r-1 (run run-1): DeterminismViolationError: Nondeterminism error',
    );
    expect(text).toContain('FAILED: 1 of 50 replayed run(s) failed');
    expect(exitCodeOf(report())).toBe(1);
  });

  it('says ok and exits 0 when nothing failed, also when nothing was listed', () => {
    const passed = report({ failures: [], ok: true, staysOn: [], types: [] });
    expect(formatReport(passed)).toContain('no workflows listed');
    expect(formatReport(passed)).toContain('ok: 0 run(s) replayed, none failed');
    expect(exitCodeOf(passed)).toBe(0);
  });
});
