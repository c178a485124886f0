/**
 * Worker Versioning (Temporal Worker Deployments): every worker process joins the deployment WORKER_DEPLOYMENT_NAME
 * with a build id derived from the workflow code it runs, so two processes with the same workflow code are one
 * Worker Deployment Version and a change to that code is a new one. See README "Deploying a new version".
 */

/** WORKER_DEPLOYMENT_NAME's default. */
export const DEFAULT_WORKER_DEPLOYMENT_NAME = 'paylater';

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
