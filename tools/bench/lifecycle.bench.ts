import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { awaitFinanceApplication, financeApplicationHandle, startFinanceApplication } from '../../src/client';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';
import { TEST_MERCHANT } from '../harness/merchant-fixtures';
import { startTestStack } from '../harness/in-process-stack';
import { report, runPool, summarize } from './stats';

const HASH_SECRET = 'bench-webhook-hash-secret-0123456789abcdef';

/**
 * The whole stack on one machine (real dev server, sandbox over HTTP, worker, Express app):
 * - coalescing: status reads per webhook under a burst (the receiver's own cost is tools/bench/receiver.bench.ts);
 * - lifecycle: how long after the bank changed a status the workflow has recorded it, with webhooks and
 *   with polling alone (all webhooks dropped).
 */
export async function benchLifecycle(): Promise<void> {
  const env = await TestWorkflowEnvironment.createLocal({ server: ephemeralDevServerOptions() });
  // The same in-process stack the integration tests use, on this bench's own dev server.
  process.env.TEMPORAL_TEST_ADDRESS = env.address;
  // Detection delay is measured above the read ceiling: its 20 applications change status in step, and 20 reads
  // at once under the default 50/s would measure the ceiling, not the path (BENCH_READS_PER_SECOND to compare).
  const readsPerSecond = Number(process.env.BENCH_READS_PER_SECOND ?? 1_000);
  const stack = await startTestStack({
    hashSecret: HASH_SECRET,
    sandbox: { lifecycle: { stepMs: 400 } },
    worker: { bankMaxReadsPerSecond: readsPerSecond },
  });
  const { sandbox } = stack;
  const { client, taskQueue } = stack.t;
  const publicBaseUrl = stack.publicUrl;

  try {
    // --- Coalescing: a burst of webhooks for long-lived applications (their statuses never move on their own).
    const parked = sandbox.control.setApplicationScript({ steps: [{ status: 'IN_PROGRESS', afterMs: 3_600_000 }] });
    const refs = Array.from({ length: 10 }, (_, i) => `bench-rx-${i}-${randomUUID().slice(0, 8)}`);
    const apps = await Promise.all(
      refs.map((merchantReference) =>
        startFinanceApplication(
          client,
          TEST_MERCHANT,
          {
            merchantReference,
            application: { redirectUrl: 'https://shop.example/return' },
            settings: { fastPollIntervalMs: 3_600_000 },
          },
          { taskQueue },
        ),
      ),
    );
    // The webhookUrl each application gave the bank (its merchant's key and hash), as the bank calls it.
    const webhookUrls = apps.map((app) => {
      const url = sandbox.control.application(app.financeApplicationId)!.createRequest.webhookUrl!;
      if (!url.startsWith(`${publicBaseUrl}/`)) throw new Error(`webhookUrl ${url} is not on the public listener`);
      return url;
    });
    const readsBefore = sandbox.control.apiCalls().filter((c) => c.route === 'getStatus').length;
    const n = 1_000;
    await runPool(n, 16, async (i) => {
      const res = await fetch(webhookUrls[i % refs.length]!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ financeApplicationId: apps[i % refs.length]!.financeApplicationId }),
      });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`webhook answered ${res.status}`);
    });
    await new Promise((r) => setTimeout(r, 2_000)); // let the last reads happen
    const reads = sandbox.control.apiCalls().filter((c) => c.route === 'getStatus').length - readsBefore;
    report('coalescing: status reads per webhook', { webhooks: n, statusReads: reads, readsPerWebhook: reads / n });
    for (const ref of refs) await financeApplicationHandle(client, TEST_MERCHANT, ref).terminate('bench done');
    sandbox.control.clearApplicationScripts();
    void parked;

    // --- Lifecycle: detection delay of each status change, with webhooks and with polling alone.
    for (const mode of ['webhooks', 'polling only'] as const) {
      sandbox.control.clearApplicationScripts();
      if (mode === 'polling only')
        sandbox.control.setApplicationScript({ steps: defaultSteps(400), webhooks: { drop: true } });
      const count = 20;
      const delays: number[] = [];
      const tStart = performance.now();
      await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const merchantReference = `bench-lc-${mode === 'webhooks' ? 'wh' : 'poll'}-${i}-${randomUUID().slice(0, 8)}`;
          const started = await startFinanceApplication(
            client,
            TEST_MERCHANT,
            {
              merchantReference,
              application: { redirectUrl: 'https://shop.example/return' },
              settings: { fastPollIntervalMs: 1_000, slowPollIntervalMs: 5_000 },
            },
            { taskQueue },
          );
          const final = await awaitFinanceApplication(client, TEST_MERCHANT, merchantReference);
          const truth = sandbox.control.application(started.financeApplicationId)!.statusHistory;
          for (const change of final.history) {
            const bankAt = truth.find((t) => t.status === change.status)?.at;
            if (bankAt && change.source !== 'create') delays.push(Date.parse(change.at) - Date.parse(bankAt));
          }
        }),
      );
      const d = summarize(delays);
      report(`lifecycle (${mode}): bank change → recorded`, {
        applications: count,
        readsPerSecondCeiling: readsPerSecond,
        changes: d.n,
        p50ms: d.p50,
        p95ms: d.p95,
        maxMs: d.max,
        wallS: (performance.now() - tStart) / 1000,
      });
    }
  } finally {
    await stack.close();
    await env.teardown();
  }
}

function defaultSteps(stepMs: number) {
  return ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'].map((status) => ({ status, afterMs: stepMs }));
}
