/**
 * The chaos run's ground-truth comparison (tools/chaos/truth.ts) and timing figures (tools/chaos/figures.ts), on
 * hand-made records of the bank sandbox and of what the product shows. Pure: no server.
 */
import { attemptFigures, backAfter, durationsByApi, slowest, type ProbeSample } from '../../tools/chaos/figures';
import { parseExposition } from '../../tools/harness/exposition';
import {
  compareApplications,
  compareRefreshes,
  compareTransactions,
  countFindings,
  duplicateCallbackKey,
  statusCallbackKey,
  type OurApplication,
  type OurRefreshRun,
} from '../../tools/chaos/truth';
import type { ApplicationRecord, RefreshTaskRecord, WebhookDelivery } from '../../src/sandbox/types';

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, s)).toISOString();

/** A webhook copy whose attempts got `statuses`, the first at T(startAt), one a second. */
function delivery(
  over: Partial<WebhookDelivery> & { statuses?: (number | null)[]; startAt?: number },
): WebhookDelivery {
  const { statuses = [202], startAt = 0, ...rest } = over;
  return {
    deliveryId: Math.random().toString(36).slice(2),
    kind: 'financeApplication',
    url: 'http://x/webhooks/finance-applications/r/h',
    body: {},
    trigger: 'manual',
    copy: 1,
    createdAt: T(0),
    outcome: statuses.some((s) => s !== null && s < 300) ? 'delivered' : 'failed',
    attempts: statuses.map((status, i) => ({
      attempt: i + 1,
      at: T(startAt + i),
      status,
      ...(status === null ? { error: 'timeout' } : {}),
    })),
    ...rest,
  };
}

function bankApp(ref: string, id: string, statuses: string[], webhooks: WebhookDelivery[] = []): ApplicationRecord {
  return {
    financeApplicationId: id,
    createRequest: { merchantReference: ref, redirectUrl: 'https://shop.example/r' },
    createdAt: T(0),
    status: statuses[statuses.length - 1]!,
    updatedAt: T(statuses.length - 1),
    statusHistory: statuses.map((status, i) => ({ status, at: T(i * 10) })),
    script: { steps: [] },
    webhooks,
  };
}

/** Our view of an application that saw the given statuses, each learned 1 s after the bank's change. */
function ours(ref: string, id: string, statuses: string[], seen: number[], over: Partial<OurApplication> = {}) {
  return {
    merchantReference: ref,
    answeredId: id,
    state: {
      financeApplicationId: id,
      status: statuses[seen[seen.length - 1]!]!,
      done: true,
      history: seen.map((i) => ({ status: statuses[i]!, at: T(i * 10 + 1), source: 'webhook' })),
      duplicateApplicationIds: [],
    },
    closedAt: T(60),
    ...over,
  } satisfies OurApplication;
}

const LIFE = ['CREATED', 'IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'];
const MERCHANT = 'shop';
const keysFor = (ref: string, statuses: string[]) => new Set(statuses.map((s) => statusCallbackKey(MERCHANT, ref, s)));

describe('compareApplications', () => {
  it('finds nothing when we followed the bank, and counts a status passed between two reads as skipped', () => {
    const { findings, figures } = compareApplications({
      bank: [bankApp('a', 'A', LIFE), bankApp('b', 'B', LIFE)],
      ours: [ours('a', 'A', LIFE, [0, 1, 2, 3, 4]), ours('b', 'B', LIFE, [0, 1, 3, 4])],
      callbacks: { merchantId: MERCHANT, keys: new Set([...keysFor('a', LIFE), ...keysFor('b', LIFE)]) },
    });
    expect(findings).toEqual([]);
    expect(figures).toMatchObject({ statusesSkipped: 1, statusesAtBank: 10, duplicatesCreated: 0 });
  });

  it('a final status other than the bank’s is wrong; not finishing while the bank has ended is lost', () => {
    const wrong = ours('a', 'A', LIFE, [0, 1, 2, 3]);
    const open = ours('b', 'B', LIFE, [0, 1]);
    open.state.done = false;
    const { findings } = compareApplications({
      bank: [bankApp('a', 'A', LIFE), bankApp('b', 'B', LIFE)],
      ours: [wrong, open],
    });
    expect(findings.map((f) => [f.category, f.subject])).toEqual([
      ['wrong', 'a'],
      ['lost', 'b'],
    ]);
    expect(findings[0]!.what).toContain('final status SIGNED');
  });

  it('an application the bank has and we cannot find, or follow under another id, is lost', () => {
    const { findings } = compareApplications({
      bank: [bankApp('a', 'A', LIFE), bankApp('b', 'B', LIFE), bankApp('stray', 'S', LIFE)],
      ours: [{ merchantReference: 'a', answeredId: 'A' }, ours('b', 'X', LIFE, [0, 4])],
    });
    expect(countFindings(findings)).toEqual({ lost: 3, wrong: 0, ackLost: 0 });
    expect(findings.map((f) => f.subject).sort()).toEqual(['a', 'b', 'stray']);
  });

  it('a reference never created anywhere is counted, not a finding', () => {
    const { findings, figures } = compareApplications({ bank: [], ours: [{ merchantReference: 'a' }] });
    expect(findings).toEqual([]);
    expect(figures.notCreated).toBe(1);
  });

  it('a history out of the bank’s order, or learned before the bank changed, is wrong', () => {
    const swapped = ours('a', 'A', LIFE, [0, 2, 1, 4]);
    const early = ours('b', 'B', LIFE, [0, 4]);
    early.state.history[1]!.at = T(39);
    const { findings } = compareApplications({
      bank: [bankApp('a', 'A', LIFE), bankApp('b', 'B', LIFE)],
      ours: [swapped, early],
    });
    expect(findings.map((f) => [f.category, f.subject])).toEqual([
      ['wrong', 'a'],
      ['wrong', 'b'],
    ]);
    expect(findings[1]!.what).toContain('before the bank changed');
  });

  it('the facade answering another id than the workflow follows is wrong', () => {
    const { findings } = compareApplications({
      bank: [bankApp('a', 'A', LIFE)],
      ours: [ours('a', 'A', LIFE, [0, 4], { answeredId: 'Z' })],
    });
    expect(findings).toEqual([expect.objectContaining({ category: 'wrong', subject: 'a' })]);
  });

  it('a webhook answered 200 ignored carrying a status we never reached is acknowledged-but-lost', () => {
    const hook = delivery({ trigger: 'status:COMPLETED', statuses: [200] });
    const behind = ours('a', 'A', LIFE, [0, 3]);
    behind.state.done = false;
    const { findings } = compareApplications({ bank: [bankApp('a', 'A', LIFE, [hook])], ours: [behind] });
    expect(findings.map((f) => f.category).sort()).toEqual(['ackLost', 'lost']);
    // The same answer for a finished application is fine: it carried nothing new.
    const fine = compareApplications({
      bank: [bankApp('a', 'A', LIFE, [delivery({ trigger: 'status:SIGNED', statuses: [200], startAt: 70 })])],
      ours: [ours('a', 'A', LIFE, [0, 4])],
    });
    expect(fine.findings).toEqual([]);
  });

  it('200 ignored while the workflow still ran (longer before its close than a signal can take) is acknowledged-but-lost', () => {
    const early = delivery({ trigger: 'status:IN_PROGRESS', statuses: [503, 200], startAt: 10 });
    const racing = delivery({ trigger: 'status:COMPLETED', statuses: [200], startAt: 56 });
    const { findings } = compareApplications({
      bank: [bankApp('a', 'A', LIFE, [early, racing])],
      ours: [ours('a', 'A', LIFE, [0, 2, 4])],
    });
    expect(findings).toEqual([
      {
        category: 'ackLost',
        subject: 'a',
        what: `webhook (status:IN_PROGRESS) answered 200 ignored at ${T(11)}, the workflow closed at ${T(60)}`,
      },
    ]);
  });

  it('duplicates at the bank: detected and reported, undetected with a reason, or acknowledged and lost', () => {
    const reported = ours('a', 'A', LIFE, [0, 4]);
    reported.state.duplicateApplicationIds = ['A2'];
    const silent = ours('b', 'B', LIFE, [0, 4]);
    const afterClose = ours('c', 'C', LIFE, [0, 4]);
    const { findings, figures } = compareApplications({
      bank: [
        bankApp('a', 'A', LIFE),
        bankApp('a', 'A2', LIFE),
        bankApp('b', 'B', LIFE),
        bankApp('b', 'B2', LIFE, [delivery({ trigger: 'status:IN_PROGRESS', statuses: [503, 202] })]),
        bankApp('c', 'C', LIFE),
        bankApp('c', 'C2', LIFE, [delivery({ trigger: 'status:COMPLETED', statuses: [200], startAt: 70 })]),
        bankApp('c', 'C3', LIFE, [delivery({ outcome: 'dropped', statuses: [] })]),
        bankApp('c', 'C4', LIFE, [delivery({ trigger: 'status:IN_PROGRESS', statuses: [200], startAt: 20 })]),
      ],
      ours: [reported, silent, afterClose],
      callbacks: {
        merchantId: MERCHANT,
        keys: new Set([...keysFor('a', ['CREATED', 'COMPLETED']), ...keysFor('b', ['CREATED', 'COMPLETED'])]),
      },
    });
    expect(figures).toMatchObject({
      duplicatesCreated: 5,
      duplicatesDetected: 1,
      duplicatesUndetected: { 'webhooks only after the workflow closed': 1, 'no webhook delivered': 1 },
    });
    expect(findings.map((f) => [f.category, f.subject, f.what.slice(0, 30)])).toEqual([
      ['lost', 'a', `duplicate A2 detected but neve`],
      ['ackLost', 'b', 'a webhook of duplicate B2 was '],
      ['ackLost', 'c', 'a webhook of duplicate C4 was '],
      ['lost', 'c', 'merchant callback never receiv'],
    ]);
    expect(duplicateCallbackKey(MERCHANT, 'a', 'A2')).toBe('finance-application:shop:a:duplicate:A2');
  });
});

// ---------------------------------------------------------------------------------------------------------------

function accountEvent(
  task: string,
  bankCode: string,
  statuses: (number | null)[],
  accounts = [`${bankCode}-1`],
): WebhookDelivery {
  return delivery({
    kind: 'accountEvent',
    url: 'http://x/webhooks/accounts',
    trigger: 'refresh',
    statuses,
    body: {
      consentId: 'c',
      taskId: task,
      taskStatus: 'FINISHED',
      bankCode,
      bankName: bankCode,
      accounts: accounts.map((accountId) => ({ accountId, eventType: 'ADDED' })),
    },
  });
}

function task(taskId: string, requested: number, events: WebhookDelivery[], codes = ['AAA', 'BBB']): RefreshTaskRecord {
  return {
    taskId,
    consentId: 'c',
    requestedAt: T(requested),
    banks: codes.map((bankCode) => ({ bankCode, bankName: bankCode, accounts: [`${bankCode}-1`], delayMs: 1 })),
    events,
  };
}

const shown = (code: string, extra: object = {}) => ({
  bankCode: code,
  taskStatus: 'FINISHED',
  accounts: [{ accountId: `${code}-1`, eventType: 'ADDED' }],
  ...extra,
});

function run(taskId: string | undefined, banks: object[], extra: object = {}): OurRefreshRun {
  return {
    consentId: 'c',
    run: 1,
    requestedAt: T(0),
    taskId,
    view: { taskId: taskId ?? null, done: true, banks: banks as never, endedBy: 'all-reported', ...extra },
  };
}

describe('compareRefreshes', () => {
  it('finds nothing when every bank that reported is shown with what it sent', () => {
    const t = task('t1', 1, [accountEvent('t1', 'AAA', [202]), accountEvent('t1', 'BBB', [503, 202])]);
    const { findings, figures } = compareRefreshes({ tasks: [t], runs: [run('t1', [shown('AAA'), shown('BBB')])] });
    expect(findings).toEqual([]);
    expect(figures).toMatchObject({ banks: 2, shown: 2, neverDelivered: 0, endedBy: { 'all-reported': 1 } });
  });

  it('a bank answered 200 ignored and missing is acknowledged-but-lost; answered 202 and missing is wrong', () => {
    const t = task('t1', 1, [accountEvent('t1', 'AAA', [200]), accountEvent('t1', 'BBB', [null, 202])]);
    const { findings } = compareRefreshes({ tasks: [t], runs: [run('t1', [])] });
    expect(findings.map((f) => [f.category, f.what.slice(0, 3)])).toEqual([
      ['ackLost', 'AAA'],
      ['wrong', 'BBB'],
    ]);
  });

  it('counts late reports as reported: banks[].late, or a lateReports array; a count is ignored', () => {
    const t = task('t1', 1, [accountEvent('t1', 'AAA', [202]), accountEvent('t1', 'BBB', [202])]);
    const flagged = compareRefreshes({
      tasks: [t],
      runs: [run('t1', [shown('AAA'), shown('BBB', { late: true })], { lateReports: 1 })],
    });
    expect(flagged.findings).toEqual([]);
    expect(flagged.figures.shownLate).toBe(1);
    const listed = compareRefreshes({ tasks: [t], runs: [run('t1', [shown('AAA')], { lateReports: [shown('BBB')] })] });
    expect(listed.findings).toEqual([]);
    expect(listed.figures.shownLate).toBe(1);
  });

  it('other accounts or taskStatus than the bank sent, or a bank it never sent, are wrong', () => {
    const t = task(
      't1',
      1,
      [accountEvent('t1', 'AAA', [202]), accountEvent('t1', 'BBB', [202])],
      ['AAA', 'BBB', 'CCC'],
    );
    const { findings } = compareRefreshes({
      tasks: [t],
      runs: [
        run('t1', [
          shown('AAA', { accounts: [{ accountId: 'other', eventType: 'ADDED' }] }),
          shown('BBB', { taskStatus: 'FAILED' }),
          shown('CCC'),
          shown('ZZZ'),
        ]),
      ],
    });
    expect(findings.map((f) => f.category)).toEqual(['wrong', 'wrong', 'wrong', 'wrong']);
  });

  it('a bank whose event never reached us is counted, not a finding', () => {
    const t = task('t1', 1, [accountEvent('t1', 'AAA', [202]), accountEvent('t1', 'BBB', [])]);
    t.events[1]!.outcome = 'dropped';
    const { findings, figures } = compareRefreshes({ tasks: [t], runs: [run('t1', [shown('AAA')])] });
    expect(findings).toEqual([]);
    expect(figures.neverDelivered).toBe(1);
  });

  it('a run that never finished is lost; a run the facade never answered is counted', () => {
    const t = task('t1', 1, []);
    const open = run('t1', []);
    open.view!.done = false;
    const { findings, figures } = compareRefreshes({ tasks: [t], runs: [open, { ...run(undefined, []), run: 2 }] });
    expect(findings).toEqual([expect.objectContaining({ category: 'lost', subject: 'c#1' })]);
    expect(figures.notStarted).toBe(1);
  });

  it('a bank task superseded by the retry of its PUT /refresh is counted; one nobody followed is lost', () => {
    const orphan = task('t0', 1, [accountEvent('t0', 'AAA', [202])]);
    const followed = task('t1', 2, []);
    const stray = task('t9', 30, []);
    const r = run('t1', []);
    r.view!.endedBy = 'timeout';
    const { findings, figures } = compareRefreshes({ tasks: [orphan, followed, stray], runs: [r] });
    expect(figures.supersededTasks).toBe(1);
    expect(findings).toEqual([expect.objectContaining({ category: 'lost', what: expect.stringContaining('t9') })]);
    expect(compareRefreshes({ tasks: [stray], runs: [], recordedTaskIds: new Set(['t9']) }).findings).toEqual([]);
  });
});

describe('compareTransactions', () => {
  const tx = (statuses: (number | null)[], accounts = ['OPB-1']) =>
    delivery({
      kind: 'transactionEvent',
      trigger: 'transactions',
      statuses,
      body: { consentId: 'c', eventType: 'NEW', accounts: accounts.map((accountId) => ({ accountId })) },
    });

  it('every transactionEvent answered 2xx reaches the merchant in a batch, with its accounts', () => {
    const deliveries = [tx([202]), tx([503, 202]), tx([503, 503])];
    const ok = compareTransactions({
      deliveries,
      batches: [
        { key: 'k1', consentId: 'c', events: 1, accounts: ['OPB-1'] },
        { key: 'k2', consentId: 'c', events: 1, accounts: ['OPB-1'] },
        { key: 'k2', consentId: 'c', events: 1, accounts: ['OPB-1'] },
      ],
    });
    expect(ok.findings).toEqual([]);
    expect(ok.figures).toEqual({ eventsAcknowledged: 2, eventsDelivered: 2, batches: 2 });
    const short = compareTransactions({
      deliveries: [...deliveries, tx([202], ['OPB-2'])],
      batches: [{ key: 'k1', consentId: 'c', events: 2, accounts: ['OPB-1'] }],
    });
    expect(short.findings).toEqual([
      expect.objectContaining({ category: 'ackLost', what: expect.stringContaining('never accounts OPB-2') }),
    ]);
  });
});

describe('timing figures', () => {
  const sample = (route: ProbeSample['route'], api: number, startedAt: number, ms: number, status: number | null) => ({
    route,
    api,
    startedAt,
    ms,
    status,
  });

  it('the slowest answer per route and status, and when each API answered again after an outage', () => {
    const samples = [
      sample('finance-webhook', 0, 1_000, 4_100, 503),
      sample('finance-webhook', 0, 1_250, 4_300, 503),
      sample('finance-webhook', 0, 9_000, 20, 200),
      sample('finance-webhook', 0, 8_000, 1_500, 200),
      sample('finance-webhook', 1, 9_100, 10, 202),
      sample('readyz', 0, 9_000, 2_100, 503),
      sample('finance-webhook', 0, 500, 5, 200), // before the stop: not a return
    ];
    expect(slowest(samples, 'finance-webhook', 503)).toBe(4_300);
    expect(slowest(samples, 'readyz')).toBe(2_100);
    expect(slowest(samples, 'account-webhook', 503)).toBeUndefined();
    const outage = { signal: 'SIGKILL', stoppedAt: 900, readyAt: 9_200 };
    expect(backAfter(samples, 'finance-webhook', outage, 0)).toBe(9_020 - 9_200);
    expect(backAfter(samples, 'finance-webhook', outage, 1)).toBe(9_110 - 9_200);
    expect(backAfter(samples, 'readyz', outage, 0)).toBeUndefined();
  });

  it('the bank’s attempts per kind: answers by status, no answer, copies dropped and given up', () => {
    const figures = attemptFigures([
      delivery({ statuses: [503, null, 202] }),
      delivery({ outcome: 'dropped', statuses: [] }),
      delivery({ kind: 'accountEvent', statuses: [null, null] }),
    ]);
    expect(figures.get('financeApplication')).toEqual({
      copies: 2,
      dropped: 1,
      attempts: 3,
      byStatus: { 503: 1, 202: 1 },
      noAnswer: 1,
      failed: 0,
    });
    expect(figures.get('accountEvent')).toMatchObject({ noAnswer: 2, failed: 1 });
  });

  it('reads an API’s own answer durations from its Prometheus histogram, per interval', () => {
    const bucket = (le: string, n: number, status = '503') =>
      `paylater_http_request_duration_seconds_bucket{le="${le}",listener="public",method="POST",route="/webhooks/accounts",status="${status}"} ${n}`;
    const text = [
      '# HELP paylater_http_request_duration_seconds HTTP request duration',
      '# TYPE paylater_http_request_duration_seconds histogram',
      bucket('1', 3),
      bucket('2.5', 5),
      bucket('5', 9),
      bucket('+Inf', 10),
      bucket('+Inf', 99, '202'),
      'nodejs_eventloop_lag_max_seconds 0.25',
    ].join('\n');
    const samples = [...parseExposition(text), ...parseExposition(text)]; // two API processes
    expect(samples.find((m) => m.name === 'nodejs_eventloop_lag_max_seconds')?.value).toBe(0.25);
    expect(durationsByApi(samples, '/webhooks/accounts', '503', [2.5, 5])).toEqual([
      { upTo: 2.5, count: 10 },
      { upTo: 5, count: 8 },
      { upTo: null, count: 2 },
    ]);
  });
});
