/**
 * GET /applications/:ref?waitForChangeFrom=… (the long-poll) and waitForFinanceApplicationChange on the whole
 * stack: the real dev server, worker, sandbox and facade. Waits are workflow updates: the tests read what they
 * add to the workflow's history.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { createInternalApp } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { WAIT_OUTCOME_HEADER } from '../../src/api/resources/finance-applications/schemas';
import {
  financeApplicationHandle,
  FinanceApplicationWaits,
  getFinanceApplication,
  startFinanceApplication,
  TooManyStatusWaitsError,
  waitForFinanceApplicationChange,
} from '../../src/client/finance-applications';
import { STATUS_WAIT_LIMITS, type FinanceApplicationSettings } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, TEST_API_KEY, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

/** Polling is off: statuses move only when the test moves the bank (each change sends its webhook). */
const WEBHOOKS_ONLY: FinanceApplicationSettings = { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 };

interface Body {
  merchantReference: string;
  financeApplicationId: string | null;
  status: string | null;
  done: boolean;
  history: { status: string }[];
}

/** Events of the latest run, by kind. */
async function historyOf(client: Client, ref: string): Promise<History> {
  return financeApplicationHandle(client, TEST_MERCHANT, ref).fetchHistory();
}
const count = (history: History, kind: string) =>
  (history.events ?? []).filter((e) => (e as Record<string, unknown>)[kind] != null).length;
const TIMER_STARTED = 'timerStartedEventAttributes';

/** Ids of the status-wait updates accepted in the history (the start update is an update too: not counted). */
function waitIds(history: History): string[] {
  return (history.events ?? [])
    .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes)
    .filter((a) => a?.acceptedRequest?.input?.name === 'waitForStatusChange')
    .map((a) => a!.protocolInstanceId!);
}
const waitsCompleted = (history: History) => {
  const ids = new Set(waitIds(history));
  return (history.events ?? []).filter((e) =>
    ids.has(e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId ?? ''),
  ).length;
};
/** Waits until the latest run has accepted `n` status waits. */
const waitsAccepted = (client: Client, ref: string, n: number) =>
  eventually(async () => (waitIds(await historyOf(client, ref)).length === n ? true : undefined));

describe('GET /applications/:ref long-poll: waiting for a change (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  // Every answer of both listeners against the OpenAPI document (the list and the long-poll included).
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    if (stack) expect(stack.openApi.checked).toBeGreaterThan(0);
    await stack?.close();
  });

  const create = async (ref: string, settings: FinanceApplicationSettings = WEBHOOKS_ONLY) => {
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const started = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings },
      { taskQueue: stack.t.taskQueue },
    );
    return started.financeApplicationId;
  };
  const wait = (ref: string, query: string, facade = stack.facade.bind(stack)) =>
    facade(`/applications/${ref}?${query}`);

  it('answers at once when the status already differs, or the application is done', async () => {
    const ref = `wait-${randomUUID()}`;
    const id = await create(ref);
    const res = await wait(ref, 'waitForChangeFrom=IN_PROGRESS&timeout=60s');
    expect(res.status).toBe(200);
    expect(res.headers.get(WAIT_OUTCOME_HEADER)).toBe('changed');
    const body = (await res.json()) as Body;
    // The same answer as the plain GET.
    expect(body).toEqual(await (await stack.facade(`/applications/${ref}`)).json());
    expect(body.status).toBe('CREATED');

    stack.sandbox.control.setApplicationStatus(id, 'COMPLETED');
    await financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref).result();
    const done = await wait(ref, 'waitForChangeFrom=COMPLETED&timeout=60s');
    expect(done.headers.get(WAIT_OUTCOME_HEADER)).toBe('done');
    expect(await done.json()).toMatchObject({ status: 'COMPLETED', done: true });
    // Neither needed an update.
    expect(waitIds(await historyOf(stack.t.client, ref))).toEqual([]);
  });

  it('answers soon after a change, with the new status', async () => {
    const ref = `wait-${randomUUID()}`;
    const id = await create(ref);
    const answer = wait(ref, 'waitForChangeFrom=CREATED&timeout=60s');
    // The wait is in the workflow (its update accepted) before the bank moves.
    await waitsAccepted(stack.t.client, ref, 1);
    const changedAt = Date.now();
    stack.sandbox.control.setApplicationStatus(id, 'IN_PROGRESS');
    const res = await answer;
    const latencyMs = Date.now() - changedAt;
    expect(res.status).toBe(200);
    expect(res.headers.get(WAIT_OUTCOME_HEADER)).toBe('changed');
    const body = (await res.json()) as Body;
    expect(body).toMatchObject({ status: 'IN_PROGRESS', done: false });
    expect(body.history.map((h) => h.status)).toEqual(['CREATED', 'IN_PROGRESS']);
    // A figure, not an assertion: bank change → webhook → read → the waiting update answers.
    process.stdout.write(`long-poll answered ${latencyMs} ms after the bank's change\n`);
  });

  it("answers 'no change' at its timeout: the status unchanged, Wait-Outcome: timeout", async () => {
    const ref = `wait-${randomUUID()}`;
    await create(ref);
    const res = await wait(ref, 'waitForChangeFrom=CREATED&timeout=1500ms');
    expect(res.status).toBe(200);
    expect(res.headers.get(WAIT_OUTCOME_HEADER)).toBe('timeout');
    expect(await res.json()).toMatchObject({ status: 'CREATED', done: false });
  });

  it('many waiters on one application, through two API processes, add two updates to its history', async () => {
    const ref = `wait-${randomUUID()}`;
    const id = await create(ref);
    // A second API process: its own app, hence its own shared waits.
    const other: Server = await listen(createInternalApp(stack.appDeps), 0, '127.0.0.1');
    const otherFacade = (path: string) =>
      fetch(`http://127.0.0.1:${boundPort(other)}${path}`, { headers: { authorization: `Bearer ${TEST_API_KEY}` } });
    try {
      const beforeHistory = await historyOf(stack.t.client, ref);
      const before = beforeHistory.events!.length;
      const waiters = [
        ...Array.from({ length: 30 }, (_, i) => wait(ref, `waitForChangeFrom=CREATED&timeout=${50 + (i % 5)}s`)),
        ...Array.from({ length: 30 }, () => wait(ref, 'waitForChangeFrom=CREATED&timeout=60s', otherFacade)),
      ];
      await waitsAccepted(stack.t.client, ref, 2);
      stack.sandbox.control.setApplicationStatus(id, 'IN_PROGRESS');
      const answers = await Promise.all(waiters);
      for (const res of answers) {
        expect(res.status).toBe(200);
        expect(res.headers.get(WAIT_OUTCOME_HEADER)).toBe('changed');
        expect(await res.json()).toMatchObject({ status: 'IN_PROGRESS' });
      }
      const history = await historyOf(stack.t.client, ref);
      expect(waitIds(history)).toHaveLength(2);
      expect(waitsCompleted(history)).toBe(2);
      expect(count(history, TIMER_STARTED) - count(beforeHistory, TIMER_STARTED)).toBe(2);
      // What the 60 waits and the change added together (the change alone: a signal, a read, their tasks).
      const added = history.events!.length - before;
      process.stdout.write(`60 waiters through 2 API processes and one status change added ${added} history events\n`);
      expect(added).toBeLessThan(40);
    } finally {
      await closeServer(other, 1_000);
    }
  });

  it('a run takes at most maxWaitsPerRun waits at once: more get 429 (facade) or TooManyStatusWaitsError', async () => {
    const ref = `wait-${randomUUID()}`;
    const id = await create(ref);
    const max = STATUS_WAIT_LIMITS.maxWaitsPerRun;
    // `max` API processes, each with its own wait (a distinct from-status each would do the same).
    const held = Array.from({ length: max }, () =>
      waitForFinanceApplicationChange(stack.t.client, TEST_MERCHANT, ref, {
        fromStatus: 'CREATED',
        timeoutMs: 60_000,
        waits: new FinanceApplicationWaits(stack.t.client),
      }),
    );
    await waitsAccepted(stack.t.client, ref, max);
    const eventsBefore = (await historyOf(stack.t.client, ref)).events!.length;
    const refused = await wait(ref, 'waitForChangeFrom=CREATED&timeout=30s');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ error: 'too_many_requests' });
    await expect(
      waitForFinanceApplicationChange(stack.t.client, TEST_MERCHANT, ref, {
        fromStatus: 'CREATED',
        timeoutMs: 10_000,
        waits: new FinanceApplicationWaits(stack.t.client),
      }),
    ).rejects.toThrow(TooManyStatusWaitsError);
    // A refused wait is not recorded.
    expect((await historyOf(stack.t.client, ref)).events!.length).toBe(eventsBefore);
    // The start update still has room: the same POST again answers 200 with the same application.
    const again = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ financeApplicationId: id });

    stack.sandbox.control.setApplicationStatus(id, 'IN_PROGRESS');
    for (const result of await Promise.all(held)) {
      expect(result).toMatchObject({ outcome: 'changed', state: { status: 'IN_PROGRESS' } });
    }
  });

  it('a wait outlives its update: a shared update that times out is followed by the next one', async () => {
    const ref = `wait-${randomUUID()}`;
    const id = await create(ref);
    const before = (await historyOf(stack.t.client, ref)).events!.length;
    const waits = new FinanceApplicationWaits(stack.t.client, { updateTimeoutMs: 500 });
    const result = waitForFinanceApplicationChange(stack.t.client, TEST_MERCHANT, ref, {
      fromStatus: 'CREATED',
      timeoutMs: 30_000,
      waits,
    });
    // Two updates timed out (500 ms each) and a third is waiting: then the bank moves.
    await waitsAccepted(stack.t.client, ref, 3);
    const history = await historyOf(stack.t.client, ref);
    expect(waitsCompleted(history)).toBe(2);
    process.stdout.write(
      `two status waits that timed out and a third accepted added ${history.events!.length - before} history events\n`,
    );
    stack.sandbox.control.setApplicationStatus(id, 'IN_PROGRESS');
    expect(await result).toMatchObject({ outcome: 'changed', state: { status: 'IN_PROGRESS' } });
    expect(waits.listening).toBe(0);
    // Ended, for the replay test (RECORD_HISTORIES=1): waits that timed out, one that saw the change, the end.
    stack.sandbox.control.setApplicationStatus(id, 'COMPLETED');
    await financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref).result();
    recordFinanceHistory(await historyOf(stack.t.client, ref), 'status-waits');
  });

  it('a wait goes on across continue-as-new (the closing run lets it go, the next run takes it)', async () => {
    const ref = `wait-${randomUUID()}`;
    const id = await create(ref, { ...WEBHOOKS_ONLY, continueAsNewAfterEvents: 20 });
    const firstRunId = (await financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref).describe()).runId;
    const answer = wait(ref, 'waitForChangeFrom=CREATED&timeout=60s');
    await waitsAccepted(stack.t.client, ref, 1);
    // Webhooks (a signal and a read each, no change) until the run continues as new.
    await eventually(async () => {
      const { runId } = await financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref).describe();
      if (runId !== firstRunId) return true;
      await stack.sandbox.control.sendApplicationWebhooks(id, 5);
      return undefined;
    });
    const first = await stack.t.client.workflow
      .getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref), firstRunId)
      .fetchHistory();
    expect(waitsCompleted(first)).toBe(1); // answered `closing` before the run continued as new
    // The wait moved to the new run; the change reaches it there.
    await waitsAccepted(stack.t.client, ref, 1);
    stack.sandbox.control.setApplicationStatus(id, 'IN_PROGRESS');
    const res = await answer;
    expect(res.headers.get(WAIT_OUTCOME_HEADER)).toBe('changed');
    expect(await res.json()).toMatchObject({ status: 'IN_PROGRESS' });
    expect((await getFinanceApplication(stack.t.client, TEST_MERCHANT, ref)).runs).toBeGreaterThan(1);
  });

  it('answers 400 on bad wait parameters and 404 for an unknown reference', async () => {
    const ref = `wait-${randomUUID()}`;
    await create(ref);
    for (const query of [
      'waitForChangeFrom=',
      'waitForChangeFrom=A%27B',
      'waitForChangeFrom=CREATED&timeout=61s',
      'waitForChangeFrom=CREATED&timeout=60001ms',
      'waitForChangeFrom=CREATED&timeout=0s',
      'waitForChangeFrom=CREATED&timeout=30',
      'waitForChangeFrom=CREATED&timeout=1m',
      'waitForChangeFrom=CREATED&waitForChangeFrom=APPROVED',
      'timeout=30s',
    ]) {
      const res = await wait(ref, query);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(await res.json()).toMatchObject({ error: 'bad_request' });
    }
    expect((await wait(`never-${randomUUID()}`, 'waitForChangeFrom=CREATED&timeout=1s')).status).toBe(404);
    await expect(
      waitForFinanceApplicationChange(stack.t.client, TEST_MERCHANT, ref, { fromStatus: 'CREATED', timeoutMs: 60_001 }),
    ).rejects.toThrow(RangeError);
  });
});
