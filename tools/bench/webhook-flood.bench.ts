import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ExportResultCode } from '@opentelemetry/core';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { awaitFinanceApplication, getFinanceApplication, startFinanceApplication } from '../../src/client';
import { loadWorkflowBundle } from '../../src/worker/prebuilt-workflow-bundle';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { financeApplicationWorkflowId, webhookKey } from '../../src/shared/ids';
import { TEST_MERCHANT } from '../harness/merchant-fixtures';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';
import { OTHER_ID_LIMITS } from '../../src/workflows/finance-application/webhook-ids';
import { runInputs } from '../harness/run-inputs';
import { startTestStack } from '../harness/in-process-stack';
import { report, runPool } from './stats';
import { startTracing } from '../../src/telemetry/tracing';
import { STATUS_SIGNAL_SPANS_PER_TASK } from '../../src/workflows/interceptors';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';

const CMD = 'npm run bench -- webhook-flood';
const HASH_SECRET = 'bench-webhook-hash-secret-0123456789abcdef';
const KiB = 1024;

/**
 * Invented financeApplicationIds on one application's webhook URL
 * (docs/decisions/0022-duplicate-ids-believed-only-when-the-bank-confirms.md): whoever holds the URL can post any id.
 * The whole stack in this process (dev server, sandbox over HTTP, worker, receiver) with the application's default
 * settings: BENCH_FLOOD_WEBHOOKS webhooks (default 10,000), each naming a new id, 16 at a time; then one real status
 * change. Prints the largest continue-as-new snapshot (the start input of each later run) and the state query's size
 * beside the target, and whether the application still tracked its own status.
 */
export async function benchWebhookFlood(): Promise<void> {
  const count = Number(process.env.BENCH_FLOOD_WEBHOOKS ?? 10_000);
  const env = await TestWorkflowEnvironment.createLocal({ server: ephemeralDevServerOptions() });
  process.env.TEMPORAL_TEST_ADDRESS = env.address;
  // The production worker's workflow code (dist/workflow-bundle.js, built by `npm run bench`): without the tracing
  // interceptors, as a worker with tracing off runs; BENCH_FLOOD_TRACING=1 takes the bundle of a worker with tracing on.
  const tracing = process.env.BENCH_FLOOD_TRACING === '1';
  const { workflowBundle } = loadWorkflowBundle(join(__dirname, '..', '..', '..', 'dist'), { tracing });
  // With tracing on, spans go where a traced worker's go (its sink, the SDK's batch processor) and are counted there.
  const exported = new Map<string, number>();
  const tracer = tracing
    ? startTracing({
        serviceName: 'paylater-bench',
        spanProcessor: new BatchSpanProcessor({
          export(spans, done) {
            for (const span of spans) exported.set(span.name, (exported.get(span.name) ?? 0) + 1);
            done({ code: ExportResultCode.SUCCESS });
          },
          shutdown: () => Promise.resolve(),
        }),
      })
    : undefined;
  const stack = await startTestStack({ hashSecret: HASH_SECRET, workflowBundle, tracing: tracer });
  const { client, taskQueue } = stack.t;
  try {
    const ref = `bench-flood-${randomUUID().slice(0, 8)}`;
    const workflowId = financeApplicationWorkflowId(TEST_MERCHANT, ref);
    // The application waits for this bench: CREATED until it changes the status itself.
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const { financeApplicationId } = await startFinanceApplication(
      client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/return' } },
      { taskQueue },
    );
    const url = `${stack.publicUrl}/webhooks/finance-applications/${webhookKey(TEST_MERCHANT, ref)}/${tenantWebhookHash(HASH_SECRET, TEST_MERCHANT, ref)}`;
    const answers = new Map<number, number>();
    const t0 = performance.now();
    await runPool(count, 16, async (i) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ financeApplicationId: `invented-${i}-${randomUUID()}` }),
      });
      await res.arrayBuffer();
      answers.set(res.status, (answers.get(res.status) ?? 0) + 1);
    });
    const postsPerSec = (count / (performance.now() - t0)) * 1000;

    // Every accepted webhook counted by the workflow (nothing kept by id beyond the bounds). One answered otherwise
    // (a 503 when Temporal took longer than the signal deadline) is one the bank would send again.
    const accepted = answers.get(202) ?? 0;
    const counted = await until(async () => {
      const s = await getFinanceApplication(client, TEST_MERCHANT, ref);
      return s.otherIds && s.otherIds.notFound + s.otherIds.unchecked >= accepted ? s : undefined;
    }, 10 * 60_000);

    // One real change: the bank's own webhook must still be followed.
    const changedAt = performance.now();
    stack.sandbox.control.setApplicationStatus(financeApplicationId, 'IN_PROGRESS');
    const tracked = await until(async () => {
      const s = await getFinanceApplication(client, TEST_MERCHANT, ref);
      return s.status === 'IN_PROGRESS' ? s : undefined;
    }, 60_000);
    const trackedMs = performance.now() - changedAt;
    const stateBytes = Buffer.byteLength(JSON.stringify(tracked ?? counted ?? {}));
    stack.sandbox.control.setApplicationStatus(financeApplicationId, 'COMPLETED');
    const final = await awaitFinanceApplication(client, TEST_MERCHANT, ref);

    const runs = await runInputs(client, workflowId, stack.payloadCodec);
    const snapshots = runs.filter((r) => r !== runs.at(-1)); // every run but the first started from a snapshot
    const largest = Math.max(0, ...snapshots.map((r) => r.storedBytes));
    const otherReads = stack.sandbox.control
      .apiCalls()
      .filter((c) => c.route === 'getStatus' && !c.path.includes(financeApplicationId)).length;
    report('webhook flood: continue-as-new snapshot', {
      invented: count,
      tracingBundle: tracing ? 'yes' : 'no',
      runs: runs.length,
      largestSnapshotKiB: largest / KiB,
      stateQueryKiB: stateBytes / KiB,
      target: '< 64 KiB',
      before: '4.96 MB snapshot (before decision 0022), tracking stopped',
      cmd: CMD,
    });
    report('webhook flood: own status tracked', {
      tracked: tracked ? 'yes' : 'NO',
      countedAll: counted ? 'yes' : 'NO',
      finalStatus: final.status ?? 'none',
      changeRecordedMs: tracked ? trackedMs : 'never',
      otherIdReads: otherReads,
      notFound: final.otherIds?.notFound ?? 0,
      unchecked: final.otherIds?.unchecked ?? 0,
      reported: final.duplicateApplicationIds?.length ?? 0,
      target: `tracked; ≤ ${OTHER_ID_LIMITS.maxConfirmationReads} reads of other ids; 0 reported`,
      cmd: CMD,
    });
    report('webhook flood: receiver', {
      postsPerSec,
      answered202: accepted,
      other:
        [...answers]
          .filter(([code]) => code !== 202)
          .map(([code, n]) => `${n}×${code}`)
          .join(',') || 0,
      target: `${count} answered 202 (a 503 is retried by the bank)`,
      cmd: CMD,
    });
    if (tracer) {
      await tracer.shutdown(); // flushes the batch processor
      report('webhook flood: spans (tracing on)', {
        signalSpansExported: exported.get(`HandleSignal:${financeApplicationStatusChangedSignal.name}`) ?? 0,
        signalsSent: exported.get(`SignalWorkflow:${financeApplicationStatusChangedSignal.name}`) ?? 0,
        workflowRuns: runs.length,
        target: `≤ ${STATUS_SIGNAL_SPANS_PER_TASK} HandleSignal spans per workflow task; the worker keeps running`,
        cmd: `BENCH_FLOOD_TRACING=1 ${CMD}`,
      });
    }
  } finally {
    await stack.close();
    await env.teardown();
  }
}

/** The first defined value of `probe`, polled every 250 ms, or undefined after `ms`. */
async function until<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
}
