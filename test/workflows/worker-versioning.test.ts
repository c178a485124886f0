/**
 * Worker Versioning on the real dev server: runs pinned to build A move to build B at their safe point once B is
 * current (and the deploy procedure's nudge wakes them), a waiting long-poll and an update in progress finish
 * first, and no run executes two builds' code. The cluster test (npm run test:cluster) does the same with a real
 * behavioural change between the builds; here both builds run the same code under two build ids.
 */
import { randomUUID } from 'node:crypto';
import type { History } from '@temporalio/common/lib/proto-utils';
import type { Client } from '@temporalio/client';
import { createWorker, type PaylaterWorkers } from '../../src/worker/factory';
import { financeApplicationHandle, startFinanceApplication } from '../../src/client/finance-applications';
import { consentClaimWorkflowId } from '../../src/shared/ids';
import type { FinanceApplicationSettings } from '../../src/shared/finance-application';
import {
  makeCurrentVersion,
  nudgeRunsOnOtherBuilds,
  type DeploymentVersion,
} from '../../src/temporal/worker-deployment';
import { WAIT_OUTCOME_HEADER } from '../../src/api/resources/finance-applications/schemas';
import { startTestStack, type TestStack } from '../helpers/stack';
import { bundleWorkflows, eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';
import { recordFinanceHistory } from '../helpers/histories';

const WEBHOOKS_ONLY: FinanceApplicationSettings = { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 };

/** The build id each workflow task of a history was completed by (the SDK reports its version on each). */
function buildsOf(history: History): string[] {
  return (history.events ?? [])
    .map((e) => e.workflowTaskCompletedEventAttributes)
    .filter((a) => a != null)
    .map((a) => a.deploymentVersion?.buildId ?? a.workerDeploymentVersion ?? '(none)');
}

async function versionOf(client: Client, workflowId: string): Promise<{ runId: string; buildId?: string | null }> {
  const d = await client.workflow.getHandle(workflowId).describe();
  return { runId: d.runId, buildId: d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId };
}

/** Another worker process's pair of workers on the stack's queues, joined to `deployment` (a second build). */
async function versionedWorker(stack: TestStack, deployment: DeploymentVersion): Promise<PaylaterWorkers> {
  return createWorker({
    connection: stack.t.nativeConnection,
    namespace: stack.t.namespace,
    taskQueue: stack.t.taskQueue,
    activities: stack.activities,
    dataConverter: stack.dataConverter,
    workflowBundle: await bundleWorkflows(require.resolve('../../src/workflows')),
    deployment,
  });
}

describe('Worker Versioning: pinned runs move to a new current version at their safe point (dev server)', () => {
  const deploymentName = `test-${randomUUID().slice(0, 8)}`;
  const A: DeploymentVersion = { deploymentName, buildId: 'build-a' };
  const B: DeploymentVersion = { deploymentName, buildId: 'build-b' };
  let stack: TestStack;
  let workerB: PaylaterWorkers | undefined;
  let runningB: Promise<void> | undefined;

  beforeAll(async () => {
    stack = await startTestStack({ worker: { deployment: A } });
    await makeCurrentVersion(stack.t.client.workflowService, stack.t.namespace, A);
  });
  afterAll(async () => {
    workerB?.shutdown();
    await runningB;
    await stack?.close();
  });

  it('moves an application and a consent claim from A to B after their long-poll and update finish', async () => {
    const client = stack.t.client;
    // On A: an application with a long-poll waiting in it, and a claimed consent.
    const ref = `versioned-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const { financeApplicationId: id } = await startFinanceApplication(
      client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings: WEBHOOKS_ONLY },
      { taskQueue: stack.t.taskQueue },
    );
    const handle = financeApplicationHandle(client, TEST_MERCHANT, ref);
    const consentId = `consent-${randomUUID()}`;
    expect((await stack.facade(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(201);
    const claimBefore = (await (await stack.facade(`/consents/${consentId}`)).json()) as Record<string, unknown>;

    const first = await versionOf(client, handle.workflowId);
    expect(first.buildId).toBe('build-a');
    // Versioning info comes with the first completed workflow task.
    await eventually(async () =>
      (await versionOf(client, consentClaimWorkflowId(consentId))).buildId === 'build-a' ? true : undefined,
    );

    const longPoll = stack.facade(`/applications/${ref}?waitForChangeFrom=CREATED&timeout=60s`);
    await eventually(async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.some(
        (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'waitForStatusChange',
      )
        ? true
        : undefined;
    });

    // B joins (the same workflow code under another build id), becomes current; the deploy's nudge wakes both.
    workerB = await versionedWorker(stack, B);
    runningB = workerB.run();
    await makeCurrentVersion(client.workflowService, stack.t.namespace, B);
    const nudged = await nudgeRunsOnOtherBuilds(client, B, { taskQueue: stack.t.taskQueue });
    expect(nudged.signalled).toBeGreaterThanOrEqual(2); // the application and the claim (and any other open run on A)

    const moved = await eventually(async () => {
      const now = await versionOf(client, handle.workflowId);
      return now.runId !== first.runId && now.buildId === 'build-b' ? now : undefined;
    }, 30_000);
    await eventually(async () =>
      (await versionOf(client, consentClaimWorkflowId(consentId))).buildId === 'build-b' ? true : undefined,
    );

    // The first run: only A's tasks; its long-poll answered before it continued as new.
    const firstHistory = await client.workflow.getHandle(handle.workflowId, first.runId).fetchHistory();
    expect(new Set(buildsOf(firstHistory))).toEqual(new Set(['build-a']));
    recordFinanceHistory(firstHistory, 'versioned-moved-first-run');
    const events = firstHistory.events ?? [];
    const waitId = events.find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'waitForStatusChange',
    )!.workflowExecutionUpdateAcceptedEventAttributes!.protocolInstanceId;
    const completedAt = events.findIndex(
      (e) => e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === waitId,
    );
    const continuedAt = events.findIndex((e) => e.workflowExecutionContinuedAsNewEventAttributes != null);
    expect(completedAt).toBeGreaterThan(-1);
    expect(continuedAt).toBeGreaterThan(completedAt);

    // The long-poll was not lost: it follows to the new run and answers the bank's next change.
    stack.sandbox.control.setApplicationStatus(id, 'IN_PROGRESS');
    const answer = await longPoll;
    expect(answer.status).toBe(200);
    expect(answer.headers.get(WAIT_OUTCOME_HEADER)).toBe('changed');
    expect(await answer.json()).toMatchObject({ status: 'IN_PROGRESS', financeApplicationId: id });

    // The new run finishes on B alone, with what the first run knew.
    stack.sandbox.control.setApplicationStatus(id, 'COMPLETED');
    const end = await handle.result();
    expect(end).toMatchObject({ status: 'COMPLETED', financeApplicationId: id });
    expect(end.history.map((h) => h.status)).toEqual(['CREATED', 'IN_PROGRESS', 'COMPLETED']);
    const lastHistory = await client.workflow.getHandle(handle.workflowId, moved.runId).fetchHistory();
    expect(new Set(buildsOf(lastHistory))).toEqual(new Set(['build-b']));
    recordFinanceHistory(lastHistory, 'versioned-moved-last-run');

    // The claim moved with its owner and its time.
    expect(await (await stack.facade(`/consents/${consentId}`)).json()).toEqual(claimBefore);
  }, 120_000);

  it('starts new runs on the current version only', async () => {
    const ref = `versioned-new-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings: WEBHOOKS_ONLY },
      { taskQueue: stack.t.taskQueue },
    );
    const handle = financeApplicationHandle(stack.t.client, TEST_MERCHANT, ref);
    expect((await versionOf(stack.t.client, handle.workflowId)).buildId).toBe('build-b');
    expect(new Set(buildsOf(await handle.fetchHistory()))).toEqual(new Set(['build-b']));
    await handle.terminate('test done');
  });
});

describe('Worker Versioning: runs from before it are pinned to the first versioned build that runs them (dev server)', () => {
  const V1: DeploymentVersion = { deploymentName: `test-${randomUUID().slice(0, 8)}`, buildId: 'first-versioned' };
  let stack: TestStack;
  let versioned: PaylaterWorkers | undefined;
  let running: Promise<void> | undefined;
  beforeAll(async () => {
    stack = await startTestStack(); // unversioned workers, as every deployment before this build
  });
  afterAll(async () => {
    versioned?.shutdown();
    await running;
    await stack?.close();
  });

  it('an unversioned application and claim, nudged, are pinned to the first versioned build and finish there', async () => {
    const client = stack.t.client;
    const ref = `unversioned-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const { financeApplicationId: id } = await startFinanceApplication(
      client,
      TEST_MERCHANT,
      { merchantReference: ref, application: { redirectUrl: 'https://shop.example/done' }, settings: WEBHOOKS_ONLY },
      { taskQueue: stack.t.taskQueue },
    );
    const handle = financeApplicationHandle(client, TEST_MERCHANT, ref);
    const consentId = `consent-${randomUUID()}`;
    expect((await stack.facade(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(201);
    const first = await versionOf(client, handle.workflowId);
    expect(first.buildId).toBeUndefined();

    // The deploy: the unversioned workers stop, the first versioned build starts and becomes current, the nudge.
    await stack.stopWorker();
    versioned = await versionedWorker(stack, V1);
    running = versioned.run();
    await makeCurrentVersion(client.workflowService, stack.t.namespace, V1);
    await eventually(async () => {
      const { signalled } = await nudgeRunsOnOtherBuilds(client, V1, { taskQueue: stack.t.taskQueue });
      return signalled >= 2 ? true : undefined;
    });

    // The server pins a run from before to the version whose worker completes its next task: the nudge is that task.
    // It stays on this build (which must replay its history: hence the patches this build keeps) until it
    // continues as new; at the next deploy it moves like any pinned run.
    await eventually(async () =>
      (await versionOf(client, handle.workflowId)).buildId === 'first-versioned' ? true : undefined,
    );
    await eventually(async () =>
      (await versionOf(client, consentClaimWorkflowId(consentId))).buildId === 'first-versioned' ? true : undefined,
    );
    expect((await versionOf(client, handle.workflowId)).runId).toBe(first.runId);
    // Its first tasks by the unversioned worker (no build id), the rest by the versioned build.
    expect(new Set(buildsOf(await handle.fetchHistory()))).toEqual(new Set(['', 'first-versioned']));
    stack.sandbox.control.setApplicationStatus(id, 'COMPLETED');
    expect(await handle.result()).toMatchObject({ status: 'COMPLETED', financeApplicationId: id });
  }, 120_000);
});
