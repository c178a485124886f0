import type { Client } from '@temporalio/client';

/**
 * The bridge release (CHANGELOG.md, docs/deploying.md#the-bridge-release-090): 0.9.0 is the last build that can
 * finish runs started before Worker Versioning or before tenancy. From 1.0.0 on the workflow code has no patch
 * markers, and the workers' core refuses a history that recorded one ("Non-deprecated patch marker encountered"):
 * so no later build may be made current while a run that 0.9.0 or an older build executed is still open.
 */

export const BRIDGE_RELEASE = {
  version: '0.9.0',
  /** The commit 0.9.0 was released from (tag v0.9.0). */
  commit: '5f0c4f118ce892dd0be6b8bafddf7c39150bcce9',
  /** Its build id, derived from its workflow code (src/temporal/worker-deployment.ts buildIdOf). */
  buildId: 'wf-1e3bff7046fbd7fe',
} as const;

/** Where the gate looks: the workflows' task queue and the Worker Deployment. */
export interface BridgeScope {
  taskQueue: string;
  deploymentName: string;
  /** The bridge's build id in this deployment: BRIDGE_RELEASE.buildId unless WORKER_BUILD_ID overrode it there. */
  bridgeBuildId?: string;
}

/** Visibility queries for the open runs a post-bridge build must not meet: unversioned, and pinned to the bridge. */
export function bridgeRunQueries(scope: BridgeScope): { unversioned: string; bridgePinned: string } {
  const open = `TaskQueue = '${scope.taskQueue}' AND ExecutionStatus = 'Running'`;
  const bridge = `${scope.deploymentName}:${scope.bridgeBuildId ?? BRIDGE_RELEASE.buildId}`;
  return {
    unversioned: `${open} AND TemporalWorkerDeploymentVersion IS NULL`,
    bridgePinned: `${open} AND TemporalWorkerDeploymentVersion = '${bridge}'`,
  };
}

export interface BridgeRuns {
  unversioned: number;
  bridgePinned: number;
}

/** What the gate reads of Temporal: counts, a listing, and a run's history. */
type GateClient = Pick<Client, 'workflow'>;

/**
 * How many open runs still need the bridge's code. An unversioned run that never completed a workflow task ran no
 * code at all, so any build may take it: one started in the moment before a fresh deployment's first build became
 * current (npm start's facade is up before it makes its build current). Up to UNVERSIONED_CHECKED unversioned runs
 * are looked at one by one; past that every one counts.
 */
export async function countBridgeRuns(client: GateClient, scope: BridgeScope): Promise<BridgeRuns> {
  const queries = bridgeRunQueries(scope);
  const [unversioned, bridgePinned] = await Promise.all([
    client.workflow.count(queries.unversioned),
    client.workflow.count(queries.bridgePinned),
  ]);
  return {
    unversioned:
      unversioned.count === 0 || unversioned.count > UNVERSIONED_CHECKED
        ? unversioned.count
        : await countRunsThatRanCode(client, queries.unversioned),
    bridgePinned: bridgePinned.count,
  };
}

const UNVERSIONED_CHECKED = 100;

async function countRunsThatRanCode(client: GateClient, query: string): Promise<number> {
  let ran = 0;
  for await (const run of client.workflow.list({ query })) {
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    if ((history.events ?? []).some((e) => e.workflowTaskCompletedEventAttributes)) ran += 1;
  }
  return ran;
}

/** Whether `buildId` is a build after the bridge (the bridge itself may always be made current again). */
export function isPostBridge(buildId: string, scope: Pick<BridgeScope, 'bridgeBuildId'> = {}): boolean {
  return buildId !== (scope.bridgeBuildId ?? BRIDGE_RELEASE.buildId);
}

/**
 * Undefined when `buildId` may be made current; else why not and how to drain, for the operator. Only a build
 * after the bridge is refused, and only while such runs are open.
 */
export function bridgeRefusal(buildId: string, runs: BridgeRuns, scope: BridgeScope): string | undefined {
  if (!isPostBridge(buildId, scope) || runs.unversioned + runs.bridgePinned === 0) return undefined;
  const queries = bridgeRunQueries(scope);
  const bridge = `${scope.deploymentName}.${scope.bridgeBuildId ?? BRIDGE_RELEASE.buildId}`;
  return [
    `${buildId} cannot be made current: ${runs.unversioned} unversioned run(s) and ${runs.bridgePinned} run(s) ` +
      `pinned to the bridge build ${bridge} (release ${BRIDGE_RELEASE.version}) are open, and a build after the ` +
      'bridge cannot replay them (their histories hold patch markers or code it no longer has).',
    'Drain them first (docs/deploying.md, "Upgrading from a version before 1.0.0"):',
    `  1. unversioned runs: deploy ${BRIDGE_RELEASE.version} (tag v${BRIDGE_RELEASE.version}), make it current and ` +
      'nudge (npm run deploy -- promote on that checkout): each moves onto the bridge build;',
    `  2. bridge-pinned runs: keep the bridge's workers running and let them finish there (a refresh within its ` +
      'timeout, an application at its final status or deadline, a claim at its release); list them with',
    `       temporal workflow list --query "${queries.bridgePinned}"`,
    `       temporal workflow list --query "${queries.unversioned}"`,
    '  3. or end the ones you can give up: temporal workflow terminate --query "<one of the queries above>" ' +
      '--reason "drained before 1.0.0"',
    'Then run this again.',
  ].join('\n');
}

/** The gate for callers that are about to make `buildId` current: counts the runs, then bridgeRefusal. */
export async function bridgeGate(
  client: GateClient,
  buildId: string,
  scope: BridgeScope,
): Promise<{ runs: BridgeRuns; refusal?: string }> {
  if (!isPostBridge(buildId, scope)) return { runs: { unversioned: 0, bridgePinned: 0 } };
  const runs = await countBridgeRuns(client, scope);
  const refusal = bridgeRefusal(buildId, runs, scope);
  return refusal === undefined ? { runs } : { runs, refusal };
}
