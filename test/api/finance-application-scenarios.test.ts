/**
 * The bank's webhooks misbehaving (dropped, duplicated, reordered, early, in bursts) and a forced
 * continue-as-new, on the whole stack. Each check compares the workflow's recorded history with the sandbox's
 * ground truth; intervals are short inputs, and no check depends on how long anything took.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import {
  awaitFinanceApplication,
  financeApplicationHandle,
  getFinanceApplication,
  startFinanceApplication,
  type FinanceApplicationSettings,
} from '../../src/client/finance-applications';
import type { ApplicationRecord, ApplicationScript } from '../../src/sandbox';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

type HistoryEvent = NonNullable<History['events']>[number];

/** Reads only on webhooks (the poll timers are far away). */
const WEBHOOKS_ONLY: FinanceApplicationSettings = { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 };
/** Polls often and never slows down. */
const FAST_POLL: FinanceApplicationSettings = { fastPollIntervalMs: 200, slowPollIntervalMs: 3_600_000 };

const steps = (afterMs: number, statuses = ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED']) =>
  statuses.map((status) => ({ status, afterMs }));

const recordHistory = recordFinanceHistory;

/** Every run of the workflow, first to last, following the continue-as-new chain from the first run. */
async function runHistories(client: Client, ref: string, firstRunId: string): Promise<History[]> {
  const histories: History[] = [];
  for (let runId: string | undefined = firstRunId; runId;) {
    const history: History = await client.workflow
      .getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref), runId)
      .fetchHistory();
    histories.push(history);
    const last: HistoryEvent | undefined = history.events?.[history.events.length - 1];
    runId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return histories;
}

/** Receiver answers of 202: each one is a signal Temporal accepted. */
const accepted = (truth: ApplicationRecord) =>
  truth.webhooks.flatMap((w) => w.attempts).filter((a) => a.status === 202).length;

describe('finance applications: webhook faults and continue-as-new (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

  async function follow(
    ref: string,
    script: ApplicationScript,
    settings: FinanceApplicationSettings,
    during?: (id: string) => Promise<void>,
  ) {
    stack.sandbox.control.setApplicationScript(script, { merchantReference: ref });
    const started = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings },
      { taskQueue: stack.t.taskQueue },
    );
    const firstRunId = (await financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref).describe()).runId;
    await during?.(started.financeApplicationId);
    const final = await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    const truth = stack.sandbox.control.application(started.financeApplicationId)!;
    return { started, final, truth, firstRunId, statuses: final.history.map((h) => h.status) };
  }
  const truthStatuses = (truth: ApplicationRecord) => truth.statusHistory.map((s) => s.status);

  it('all webhooks dropped: polling still ends with the sandbox final status', async () => {
    const ref = `drop-${randomUUID()}`;
    const { final, truth, firstRunId } = await follow(ref, { steps: steps(150), webhooks: { drop: true } }, FAST_POLL);
    expect(truth.webhooks.every((w) => w.outcome === 'dropped')).toBe(true);
    expect(final).toMatchObject({ done: true, outcome: 'terminal', status: truth.status, webhooksReceived: 0 });
    expect(final.history.slice(1).every((h) => h.source === 'poll')).toBe(true);
    // Polling may miss a short-lived status, never invents or reorders one.
    const order = truthStatuses(truth);
    const positions = final.history.map((h) => order.indexOf(h.status));
    expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
    recordHistory((await runHistories(stack.t.client, ref, firstRunId))[0]!, 'polling');
  });

  it('duplicated, reordered, early and burst webhooks: the recorded history equals the ground truth', async () => {
    const run = (name: string) => `${name}-${randomUUID()}`;
    const [duplicated, reordered, early, burst] = await Promise.all([
      // Steps three seconds apart: the read after each webhook sees its status even when a loaded machine delays it
      // past a second (one-second steps missed APPROVED in a full run); latency is the bench's job.
      follow(run('dup'), { steps: steps(3_000), webhooks: { duplicate: 3 } }, WEBHOOKS_ONLY),
      // Held until the last step, then newest first: polling sees the steps, the stale reads change nothing.
      // (Server timers fire at about one-second resolution, so each status lasts a few seconds.)
      follow(
        run('reorder'),
        { steps: steps(3_000, ['IN_PROGRESS', 'APPROVED', 'COMPLETED']), webhooks: { reorder: true, duplicate: 2 } },
        FAST_POLL,
      ),
      // The first change and its webhook happen before the create response reaches the workflow.
      follow(
        run('early'),
        { steps: steps(1_000, ['IN_PROGRESS', 'APPROVED', 'COMPLETED']), webhooks: { beforeCreateResponse: true } },
        WEBHOOKS_ONLY,
      ),
      // 50 extra webhooks while APPROVED. The last step waits long enough for them to be sent, also on a loaded
      // machine: with 3 s, a start answered late found the application COMPLETED already (a fresh clone's npm test).
      follow(
        run('burst'),
        { steps: [...steps(1_000, ['IN_PROGRESS', 'APPROVED']), { status: 'COMPLETED', afterMs: 10_000 }] },
        WEBHOOKS_ONLY,
        async (id) => {
          await eventually(() => (stack.sandbox.control.application(id)!.status === 'APPROVED' ? true : undefined));
          await stack.sandbox.control.sendApplicationWebhooks(id, 50);
        },
      ),
    ]);

    for (const scenario of [duplicated, reordered, early, burst]) {
      expect(scenario.statuses).toEqual(truthStatuses(scenario.truth));
      expect(scenario.final).toMatchObject({ done: true, status: scenario.truth.status, mismatchedWebhooks: 0 });
    }
    expect(duplicated.truth.webhooks.filter((w) => w.copy > 1).length).toBeGreaterThan(0);
    expect(reordered.final.history.filter((h) => h.source === 'poll').length).toBeGreaterThan(0);
    // The early webhook was accepted although the workflow did not know its application id yet.
    expect(early.truth.webhooks[0]!.attempts[0]!.status).toBe(202);
    expect(early.final.history[1]).toMatchObject({ status: 'IN_PROGRESS', source: 'webhook' });
    expect(burst.truth.webhooks.filter((w) => w.trigger === 'manual' && w.outcome === 'delivered')).toHaveLength(50);
    expect(burst.final.webhooksReceived).toBeGreaterThanOrEqual(52);
    expect(burst.final.statusReads).toBeLessThan(burst.final.webhooksReceived);
    recordHistory(
      (await runHistories(stack.t.client, early.started.merchantReference, early.firstRunId))[0]!,
      'early-webhook',
    );
  });

  it('a workflow forced to continue as new keeps its history and loses no signal', async () => {
    const ref = `can-${randomUUID()}`;
    // No scripted lifecycle: the test moves the bank on once the workflow recorded each status, so every
    // status is seen however long a run takes to continue as new.
    stack.sandbox.control.setApplicationScript({ steps: [], webhooks: { duplicate: 2 } }, { merchantReference: ref });
    const started = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      {
        merchantReference: ref,
        application: { redirectUrl: 'https://shop.example/done' },
        settings: { ...WEBHOOKS_ONLY, continueAsNewAfterEvents: 20 },
      },
      { taskQueue: stack.t.taskQueue },
    );
    const id = started.financeApplicationId;
    const firstRunId = (await financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref).describe()).runId;
    for (const status of ['IN_PROGRESS', 'APPROVED', 'SIGNED']) {
      stack.sandbox.control.setApplicationStatus(id, status);
      if (status === 'APPROVED') await stack.sandbox.control.sendApplicationWebhooks(id, 10);
      await eventually(async () =>
        (await getFinanceApplication(stack.t.client, TEST_MERCHANT, ref)).status === status ? true : undefined,
      );
    }
    stack.sandbox.control.setApplicationStatus(id, 'COMPLETED');
    const final = await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    const truth = stack.sandbox.control.application(id)!;

    const histories = await runHistories(stack.t.client, ref, firstRunId);
    expect(histories.length).toBeGreaterThan(1);
    expect(final.runs).toBe(histories.length);
    expect(final.history.map((h) => h.status)).toEqual(truthStatuses(truth));
    // Every webhook the receiver acknowledged with 202 is a signal in some run, and the workflow counted each.
    const signals = histories.flatMap((h) => h.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
    expect(signals).toHaveLength(accepted(truth));
    expect(final.webhooksReceived).toBe(accepted(truth));
    recordHistory(histories[0]!, 'continue-as-new-first-run');
    recordHistory(histories[histories.length - 1]!, 'continue-as-new-last-run');
  });
});
