/**
 * The bridge's gate (src/temporal/bridge-release.ts, in the replay gate of src/tools/replay-check.ts) on the real dev
 * server: a build after the bridge is refused while a run is unversioned or pinned to the bridge build, and accepted
 * once the bridge is drained the way docs/deploying.md says (ramp the new build, nudge). The bridge build runs the
 * bridge release's own workflow bundle (test/fixtures/bridge-0.9.0).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Worker } from '@temporalio/worker';
import { consentClaimWorkflowId } from '../../src/shared/ids';
import { upgradeCheckSignal } from '../../src/shared/versioning';
import { BRIDGE_RELEASE, bridgeGate, countBridgeRuns, type BridgeScope } from '../../src/temporal/bridge-release';
import {
  makeCurrentVersion,
  nudgeRunsOnOtherBuilds,
  versionSearchValue,
  type DeploymentVersion,
} from '../../src/temporal/worker-deployment';
import { NO_TRACING_SINKS } from '../../src/telemetry/tracing';
import { runReplayCheck, type ReplayCheckTarget } from '../../src/tools/replay-check';
import { exitCodeOf } from '../../src/tools/replay-selection';
import { bundleWorkflows, connectTestTemporal, eventually, type TemporalTestContext } from '../helpers/temporal';

describe(`the bridge's gate: no build after ${BRIDGE_RELEASE.version} while a run needs the bridge (dev server)`, () => {
  const deploymentName = `bridge-${randomUUID().slice(0, 8)}`;
  const BRIDGE: DeploymentVersion = { deploymentName, buildId: BRIDGE_RELEASE.buildId };
  const NEXT: DeploymentVersion = { deploymentName, buildId: 'wf-after-the-bridge' };
  const dir = mkdtempSync(join(tmpdir(), 'paylater-bridge-gate-'));
  let t: TemporalTestContext;
  let scope: BridgeScope;
  const workers: { worker: Worker; running: Promise<void> }[] = [];

  beforeAll(async () => {
    t = await connectTestTemporal();
    scope = { taskQueue: t.taskQueue, deploymentName };
  });
  afterAll(async () => {
    for (const { worker, running } of workers) {
      worker.shutdown();
      await running.catch(() => undefined);
    }
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function startWorker(version: DeploymentVersion, code: string): Promise<void> {
    const worker = await Worker.create({
      connection: t.nativeConnection,
      taskQueue: t.taskQueue,
      dataConverter: t.dataConverter,
      workflowBundle: { code },
      sinks: NO_TRACING_SINKS,
      workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'PINNED' },
    });
    workers.push({ worker, running: worker.run() });
  }

  /** The replay gate as `npm run replay-check` runs it, checking NEXT's bundle (written to `bundlePath`). */
  async function gate(bundlePath: string) {
    const target: ReplayCheckTarget = {
      client: t.client,
      address: t.address,
      namespace: t.namespace,
      taskQueue: t.taskQueue,
      dataConverter: t.dataConverter,
    };
    return runReplayCheck(target, { bundlePath, checked: NEXT, sinceMs: 0, sample: 10, all: false, concurrency: 2 });
  }

  it('refuses while a run is unversioned, then while it is pinned to the bridge; accepts once ramp and nudge moved it', async () => {
    const nextBundle = join(dir, 'next-workflow-bundle.js');
    writeFileSync(nextBundle, (await bundleWorkflows(require.resolve('../../src/workflows'))).code);
    const bridgeCode = gunzipSync(
      readFileSync(join(__dirname, '..', 'fixtures', `bridge-${BRIDGE_RELEASE.version}`, 'workflow-bundle.js.gz')),
    ).toString('utf8');

    // A run from before Worker Versioning: started and run by an unversioned worker (the bridge's code), which then
    // stops. Until its first workflow task completed it ran no code, and the gate lets any build take it.
    const consentId = `bridge-${randomUUID()}`;
    const workflowId = consentClaimWorkflowId(consentId);
    const handle = await t.client.workflow.start('consentClaimWorkflow', {
      taskQueue: t.taskQueue,
      workflowId,
      args: [{ consentId, merchantId: 'shop-a' }],
    });
    await eventually(async () => ((await countBridgeRuns(t.client, scope)).unversioned === 0 ? true : undefined));
    expect((await gate(nextBundle)).bridge).toMatchObject({ unversioned: 0, bridgePinned: 0 });
    const unversionedWorker = await Worker.create({
      connection: t.nativeConnection,
      taskQueue: t.taskQueue,
      dataConverter: t.dataConverter,
      workflowBundle: { code: bridgeCode },
      sinks: NO_TRACING_SINKS,
    });
    const ranFirstTask = unversionedWorker.runUntil(
      eventually(async () =>
        ((await handle.fetchHistory()).events ?? []).some((e) => e.workflowTaskCompletedEventAttributes)
          ? true
          : undefined,
      ),
    );
    await ranFirstTask;
    await eventually(async () => ((await countBridgeRuns(t.client, scope)).unversioned === 1 ? true : undefined));
    const unversioned = await gate(nextBundle);
    expect(unversioned.bridge).toMatchObject({ unversioned: 1, bridgePinned: 0 });
    expect(unversioned.bridge?.refusal).toContain('1 unversioned run(s)');
    expect(unversioned.bridge?.refusal).toContain(`TemporalWorkerDeploymentVersion IS NULL`);
    expect([unversioned.ok, exitCodeOf(unversioned)]).toEqual([false, 1]);

    // The bridge made current: its worker takes the run over and the server pins it there.
    await startWorker(BRIDGE, bridgeCode);
    await makeCurrentVersion(t.client.workflowService, t.namespace, BRIDGE, { timeoutMs: 60_000 });
    // The nudge the deploy procedure sends: the run's next workflow task goes to the current version.
    await handle.signal(upgradeCheckSignal);
    await eventually(async () => {
      const runs = await countBridgeRuns(t.client, scope);
      return runs.unversioned === 0 && runs.bridgePinned === 1 ? true : undefined;
    }, 60_000);
    const pinned = await gate(nextBundle);
    expect(pinned.bridge).toMatchObject({ unversioned: 0, bridgePinned: 1 });
    expect(pinned.bridge?.refusal).toContain(`pinned to the bridge build ${deploymentName}.${BRIDGE_RELEASE.buildId}`);
    expect(pinned.bridge?.refusal).toContain(`TemporalWorkerDeploymentVersion = '${versionSearchValue(BRIDGE)}'`);
    expect(exitCodeOf(pinned)).toBe(1);
    // The bridge itself may always be made current again (a rollback).
    expect((await bridgeGate(t.client, BRIDGE.buildId, scope)).refusal).toBeUndefined();

    // The drain: NEXT ramped to 100 % and the runs nudged; the claim continues as new onto NEXT at its safe point.
    await startWorker(NEXT, readFileSync(nextBundle, 'utf8'));
    await eventually(async () => {
      await t.client.workflowService.setWorkerDeploymentRampingVersion({
        namespace: t.namespace,
        deploymentName,
        buildId: NEXT.buildId,
        percentage: 100,
        identity: 'bridge-gate-test',
      });
      return true;
    }, 60_000);
    await eventually(async () => {
      await nudgeRunsOnOtherBuilds(t.client, NEXT, { taskQueue: t.taskQueue });
      const runs = await countBridgeRuns(t.client, scope);
      return runs.bridgePinned === 0 && runs.unversioned === 0 ? true : undefined;
    }, 60_000);
    const description = await t.client.workflow.getHandle(workflowId).describe();
    expect(description.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId).toBe(NEXT.buildId);

    const drained = await gate(nextBundle);
    expect(drained.bridge).toEqual({ unversioned: 0, bridgePinned: 0 });
    expect([drained.ok, exitCodeOf(drained), drained.failures]).toEqual([true, 0, []]);
    await makeCurrentVersion(t.client.workflowService, t.namespace, NEXT, { timeoutMs: 60_000 });
    await t.client.workflow.getHandle(workflowId).terminate('test done');
  });
});
