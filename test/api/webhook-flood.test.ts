/**
 * Invented financeApplicationIds on one application's webhook URL
 * (docs/decisions/0022-duplicate-ids-believed-only-when-the-bank-confirms.md): whoever holds the URL may post any id.
 * On the whole stack (dev server, sandbox over HTTP, worker, receiver), with the worker's Runtime exporting the
 * workflows' metrics: the application keeps following its own status, nothing else is started, a few ids at most are
 * read at the bank, none reaches the merchant, every one is counted, and the carried snapshot stays small.
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { awaitFinanceApplication, startFinanceApplication } from '../../src/client/finance-applications';
import { freeLoopbackPort } from '../../src/temporal/free-port';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { financeApplicationStateQuery } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId, webhookKey } from '../../src/shared/ids';
import { TEST_MERCHANT } from '../helpers/merchants';
import { WorkflowMetric } from '../../src/shared/metric-names';
import { temporalMetricsOptions } from '../../src/worker/metrics';
import { OTHER_ID_LIMITS } from '../../src/workflows/finance-application/webhook-ids';
import { startMerchant } from '../activities/helpers/merchant-server';
import { recordFinanceHistory, runInputs } from '../helpers/histories';
import { parseExposition, sumOf } from '../helpers/prometheus';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

const FLOOD = 300;

describe('a flood of invented financeApplicationIds on one webhook URL (whole stack)', () => {
  let merchant: Awaited<ReturnType<typeof startMerchant>>;
  let stack: TestStack;
  let metricsUrl: string;

  beforeAll(async () => {
    // The suite's setup installed a Runtime without an exporter: this file's Runtime is a worker process's.
    await Runtime.instance().shutdown();
    const port = await freeLoopbackPort();
    Runtime.install({
      logger: new DefaultLogger('WARN'),
      telemetryOptions: { metrics: temporalMetricsOptions(`127.0.0.1:${port}`) },
      // As the suite's (test/setup/quiet-runtime.ts): jest's processes end on SIGINT and SIGTERM.
      shutdownSignals: [],
    });
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    merchant = await startMerchant();
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.close();
    await merchant?.close();
  });

  /** Webhooks this file's workflows counted as naming an unconfirmed id, by verdict. */
  async function invented(): Promise<{ notFound: number; unchecked: number }> {
    const samples = parseExposition(await (await fetch(metricsUrl)).text()).filter(
      (s) => s.labels.taskQueue === stack.t.taskQueue,
    );
    const name = `${WorkflowMetric.inventedApplicationIds}_total`;
    return {
      notFound: sumOf(samples, name, { verdict: 'not_found' }),
      unchecked: sumOf(samples, name, { verdict: 'unchecked' }),
    };
  }

  it('300 invented ids and one real change: tracked to its status, nothing started, nothing pushed, all counted', async () => {
    const ref = `flood-${randomUUID()}`;
    const workflowId = financeApplicationWorkflowId(TEST_MERCHANT, ref);
    // The bank's lifecycle waits for this test: the application stays CREATED until it changes it.
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const { financeApplicationId } = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      {
        merchantReference: ref,
        application: { redirectUrl: 'https://shop.example/done' },
        callbackUrl: merchant.url,
        // Webhooks drive the reads; a small history limit continues as new several times during the flood.
        settings: { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000, continueAsNewAfterEvents: 120 },
      },
      { taskQueue: stack.t.taskQueue },
    );
    const readsOfOthers = () =>
      stack.sandbox.control.apiCalls().filter((c) => c.route === 'getStatus' && !c.path.includes(financeApplicationId))
        .length;

    const url = `${stack.publicUrl}/webhooks/finance-applications/${webhookKey(TEST_MERCHANT, ref)}/${tenantWebhookHash(stack.webhooks.hashSecret, TEST_MERCHANT, ref)}`;
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = next++; i < FLOOD; i = next++) {
          const body = JSON.stringify({ financeApplicationId: `invented-${i}-${randomUUID()}` });
          // As the bank does: a 503 (the signal's deadline passed on a starved machine) is sent again, the same body.
          for (let attempt = 1; ; attempt++) {
            const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
            await res.arrayBuffer();
            if (res.status !== 503 || attempt === 5) {
              statuses.push(res.status);
              break;
            }
            await new Promise((resolve) => setTimeout(resolve, 1_000));
          }
        }
      }),
    );
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
    expect(statuses).toHaveLength(FLOOD);

    // Every invented webhook reached the workflow and was counted, while the application waited at CREATED.
    const handle = stack.t.client.workflow.getHandle(workflowId);
    const counted = await eventually(async () => {
      const s = await handle.query(financeApplicationStateQuery);
      const o = s.otherIds;
      // At least every acknowledged one; a 503 whose signal landed after its deadline, sent again, counts twice.
      return o && o.notFound + o.unchecked >= FLOOD ? s : undefined;
    }, 60_000);
    expect(counted).toMatchObject({ status: 'CREATED', done: false });
    expect(counted.webhooksReceived).toBeGreaterThanOrEqual(FLOOD);
    expect(counted.otherIds!.reads).toBeLessThanOrEqual(OTHER_ID_LIMITS.maxConfirmationReads);
    expect(counted.otherIds!.notFound).toBe(counted.otherIds!.reads);
    expect(counted.duplicateApplicationIds).toBeUndefined();

    // One real change (and then the end): the bank's own webhooks still move the application.
    stack.sandbox.control.setApplicationStatus(financeApplicationId, 'IN_PROGRESS');
    await eventually(async () =>
      (await handle.query(financeApplicationStateQuery)).status === 'IN_PROGRESS' ? true : undefined,
    );
    stack.sandbox.control.setApplicationStatus(financeApplicationId, 'COMPLETED');
    const final = await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    expect(final).toMatchObject({ done: true, outcome: 'terminal', status: 'COMPLETED' });
    expect(final.history.map((h) => [h.status, h.source])).toEqual([
      ['CREATED', 'create'],
      ['IN_PROGRESS', 'webhook'],
      ['COMPLETED', 'webhook'],
    ]);
    expect(final.otherIds).toEqual(counted.otherIds);

    // The bank read at most the budget of other ids (each one once), and nothing else was started.
    expect(readsOfOthers()).toBe(final.otherIds!.reads);
    expect(
      await stack.t.client.workflow.count(`TaskQueue = '${stack.t.taskQueue}' AND WorkflowId != '${workflowId}'`),
    ).toMatchObject({ count: 0 });

    // The merchant heard of its own changes only: no duplicate reported, no invented id anywhere.
    await eventually(() => (merchant.received.length >= 3 ? true : undefined));
    const events = merchant.received.map((r) => JSON.parse(r.body) as { type: string; data: { status?: string } });
    expect(events.map((e) => [e.type, e.data.status])).toEqual([
      ['finance-application.status-changed', 'CREATED'],
      ['finance-application.status-changed', 'IN_PROGRESS'],
      ['finance-application.status-changed', 'COMPLETED'],
    ]);
    expect(merchant.received.some((r) => r.body.includes('invented-'))).toBe(false);

    // The continue-as-new snapshots stayed small (the flood continued the run: usually several times, once when a
    // loaded machine batches most of the signals into one workflow task).
    const runs = await runInputs(stack.t.client, workflowId, stack.payloadCodec);
    expect(runs.filter((r) => r.continuedAsNew).length).toBeGreaterThanOrEqual(1);
    for (const run of runs) expect(run.storedBytes).toBeLessThan(64 * 1024);
    expect(Buffer.byteLength(JSON.stringify(final))).toBeLessThan(64 * 1024);

    // Counted in the metric: every invented webhook, by verdict (the SDK exports it after the workflow task).
    const metric = await eventually(async () => {
      const m = await invented();
      return m.notFound + m.unchecked === final.otherIds!.notFound + final.otherIds!.unchecked ? m : undefined;
    }, 20_000);
    expect(metric).toEqual({ notFound: final.otherIds!.notFound, unchecked: final.otherIds!.unchecked });

    // The first run: the confirmation reads (404), the bounded intake, and continue-as-new, for the replay test.
    const first = runs.at(-1)!;
    recordFinanceHistory(
      await stack.t.client.workflow.getHandle(workflowId, first.runId).fetchHistory(),
      'webhook-flood',
    );
  });
});
