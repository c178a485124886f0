/**
 * Worker Versioning (Temporal Worker Deployments): every worker process joins the deployment WORKER_DEPLOYMENT_NAME
 * with a build id derived from the workflow code it runs, so two processes with the same workflow code are one
 * Worker Deployment Version and a change to that code is a new one. See docs/deploying.md.
 */

import { UPGRADE_CHECK_SIGNAL } from '../shared/versioning';

/** WORKER_DEPLOYMENT_NAME's default. */
export const DEFAULT_WORKER_DEPLOYMENT_NAME = 'paylater';

/** WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID: no '.', which the CLI uses between the two. */
export const DEPLOYMENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

/** A Worker Deployment Version: the deployment's name and the build's id (`{deploymentName}.{buildId}` in the CLI). */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The build id of workflow code whose bundle inputs hash to `inputsSha256` (workflowInputsHash: every file of
 * dist/workflows and dist/shared). Activity-only changes keep the build id: they need no versioning, and a rolling
 * restart of the same workflow code stays one version. 16 hex digits: 64 bits, no collision between builds.
 */
export function buildIdOf(inputsSha256: string): string {
  if (!/^[0-9a-f]{64}$/.test(inputsSha256)) throw new Error('inputsSha256 must be a SHA-256 in hex');
  return `wf-${inputsSha256.slice(0, 16)}`;
}

/** The CLI's and the Web UI's spelling of a version. */
export function versionString(version: DeploymentVersion): string {
  return `${version.deploymentName}.${version.buildId}`;
}

/** What makeCurrentVersion needs of a client: its WorkflowService (Client.workflowService). */
export interface DeploymentService {
  setWorkerDeploymentCurrentVersion(request: {
    namespace: string;
    deploymentName: string;
    buildId: string;
    identity?: string;
  }): Promise<unknown>;
  describeWorkerDeployment(request: { namespace: string; deploymentName: string }): Promise<{
    workerDeploymentInfo?: { routingConfigUpdateState?: number | null } | null;
  }>;
}

/** RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED */
const ROUTING_PROPAGATED = 2;

/**
 * Makes `version` the Current Version of its Worker Deployment: new workflows start on it, and pinned runs of other
 * versions see `targetWorkerDeploymentVersionChanged` at their next workflow task (they move at their next safe
 * point). The server refuses until the version's workers have polled every task queue the deployment serves, so this
 * asks again (every `intervalMs`) until it is accepted, `timeoutMs` passes, or `signal` aborts; then it waits until
 * the new routing has reached every task queue. What `npm start`
 * does for its own build; in production the deploy procedure does it (docs/deploying.md).
 *
 * The version is current once the server accepts it; the routing then reaches the task queues on its own. By
 * default a routing still on its way at `timeoutMs` is an error (the deploy's nudge must not run before it);
 * `routing: 'best-effort'` returns `'propagating'` instead (npm start: a loaded machine's dev server may take longer,
 * and its own build serving a little later is no reason to stop).
 */
export async function makeCurrentVersion(
  service: DeploymentService,
  namespace: string,
  version: DeploymentVersion,
  options: {
    identity?: string;
    timeoutMs?: number;
    intervalMs?: number;
    signal?: AbortSignal;
    routing?: 'required' | 'best-effort';
  } = {},
): Promise<'propagated' | 'propagating'> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: options.identity ?? 'paylater',
      });
      break;
    } catch (err) {
      if (options.signal?.aborted || Date.now() >= deadline) {
        throw new Error(
          `could not make ${versionString(version)} the current version: ${(err as Error).message ?? String(err)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500));
    }
  }
  // Then until every task queue knows: a workflow task dispatched before that does not show the new version, so a
  // nudge sent earlier would wake a run for nothing.
  for (;;) {
    const { workerDeploymentInfo } = await service.describeWorkerDeployment({
      namespace,
      deploymentName: version.deploymentName,
    });
    const state = workerDeploymentInfo?.routingConfigUpdateState ?? 0;
    // 0: a server that does not report it.
    if (state === ROUTING_PROPAGATED || state === 0 || options.signal?.aborted) return 'propagated';
    if (Date.now() >= deadline) {
      if (options.routing === 'best-effort') return 'propagating';
      throw new Error(`${versionString(version)} is current, but its routing has not reached every task queue yet`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The value of the TemporalWorkerDeploymentVersion search attribute (`{deployment}:{build}`) for `version`. */
export function versionSearchValue(version: DeploymentVersion): string {
  return `${version.deploymentName}:${version.buildId}`;
}

/**
 * A visibility query for the open runs of `taskQueue` that this version does not run yet: pinned to another version
 * of the deployment, or unversioned (started before Worker Versioning; a versioned worker moves them onto a pinned
 * run at their safe point). Without `taskQueue`: the deployment's pinned runs only.
 */
export function openRunsOnOtherBuildsQuery(version: DeploymentVersion, taskQueue?: string): string {
  const otherBuild =
    `TemporalWorkerDeployment = '${version.deploymentName}' AND ` +
    `TemporalWorkerDeploymentVersion != '${versionSearchValue(version)}'`;
  if (taskQueue === undefined) return `${otherBuild} AND ExecutionStatus = 'Running'`;
  return (
    `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running' AND ` +
    `(TemporalWorkerDeploymentVersion IS NULL OR (${otherBuild}))`
  );
}

/**
 * `npm start` on a data folder whose runs were pinned to another build (the workflow code changed between two
 * starts): those runs wait for their build's workers, which this process is not. Says so, with the way out, rather
 * than moving them silently onto code they did not start with.
 */
export async function warnAboutOtherBuilds(
  client: { workflow: { count(query: string): Promise<{ count: number }> } },
  namespace: string,
  version: DeploymentVersion,
  logger: { warn(obj: object, msg: string): void },
): Promise<number> {
  const query = openRunsOnOtherBuildsQuery(version);
  const { count } = await client.workflow.count(query).catch(() => ({ count: 0 }));
  if (count > 0) {
    logger.warn(
      { openRuns: count, namespace, query },
      `${count} open run(s) are pinned to another build of this deployment: they go on when that build's worker ` +
        'runs (check out its commit and `npm start`), or move them onto this build (replay may fail if the ' +
        'change is incompatible): temporal workflow update-options --query "<query>" --versioning-override-behavior auto_upgrade',
    );
  }
  return count;
}

/** What nudgeRunsOnOtherBuilds needs of a Client. */
export interface NudgeClient {
  workflow: {
    list(options: { query: string }): AsyncIterable<{ workflowId: string; runId: string }>;
    getHandle(workflowId: string, runId?: string): { signal(name: string): Promise<void> };
  };
}

/**
 * The deploy procedure's nudge (src/shared/versioning.ts): signals `upgradeCheck` to every open run pinned to
 * another build of the deployment (with `taskQueue`: and every unversioned run of that queue), so a run asleep on a long poll or with no timer at all (a consent claim) wakes
 * on its own build, sees the new Current Version and continues as new onto it at its safe point. Run it after
 * makeCurrentVersion. Types that do not move (the consent refresh) record the signal and finish on their build.
 * A run that closed meanwhile is skipped. Returns how many were signalled.
 */
export async function nudgeRunsOnOtherBuilds(
  client: NudgeClient,
  version: DeploymentVersion,
  options: { taskQueue?: string; concurrency?: number } = {},
): Promise<{ signalled: number; closed: number }> {
  const concurrency = options.concurrency ?? 20;
  let signalled = 0;
  let closed = 0;
  const inFlight = new Set<Promise<void>>();
  for await (const run of client.workflow.list({ query: openRunsOnOtherBuildsQuery(version, options.taskQueue) })) {
    const p = client.workflow
      .getHandle(run.workflowId, run.runId)
      .signal(UPGRADE_CHECK_SIGNAL)
      .then(
        () => void signalled++,
        (err: unknown) => {
          // Closed (or continued as new) since it was listed: nothing to wake.
          if ((err as Error).name === 'WorkflowNotFoundError') closed++;
          else throw err;
        },
      )
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return { signalled, closed };
}

/** What bootstrapCurrentVersion needs: a WorkflowService (a NativeConnection's or a Client's). */
export interface BootstrapService extends DeploymentService {
  countWorkflowExecutions(request: { namespace: string; query: string }): Promise<{ count?: Long | number | null }>;
}
type Long = { toNumber(): number };

/**
 * A fresh deployment's first build makes itself current, so a first `npm run worker` (a new environment, the
 * cluster test, chaos) serves without a deploy step. Never a later build: once a version is current, only the deploy
 * procedure changes it (after the replay gate). Nor a first versioned build meeting open runs from before Worker
 * Versioning: that is the bridge deploy, which the operator does (`npm run replay-check`, then `npm run deploy --
 * promote`). Returns what it did.
 */
export async function bootstrapCurrentVersion(
  service: BootstrapService,
  namespace: string,
  version: DeploymentVersion,
  taskQueue: string,
  options: { signal?: AbortSignal } = {},
): Promise<'made-current' | 'is-current' | 'another-is-current' | 'unversioned-runs-open'> {
  const { workerDeploymentInfo } = await service
    .describeWorkerDeployment({ namespace, deploymentName: version.deploymentName })
    .catch(() => ({ workerDeploymentInfo: undefined }));
  const routing = (
    workerDeploymentInfo as { routingConfig?: { currentDeploymentVersion?: { buildId?: string | null } | null } }
  )?.routingConfig;
  const current = routing?.currentDeploymentVersion?.buildId;
  if (current) return current === version.buildId ? 'is-current' : 'another-is-current';
  const { count } = await service.countWorkflowExecutions({
    namespace,
    query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion IS NULL`,
  });
  const open = typeof count === 'number' ? count : (count?.toNumber() ?? 0);
  if (open > 0) return 'unversioned-runs-open';
  await makeCurrentVersion(service, namespace, version, { identity: 'paylater-worker', signal: options.signal });
  return 'made-current';
}
