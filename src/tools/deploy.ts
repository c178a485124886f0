// `npm run deploy -- <command>`: the deploy procedure's steps against the Temporal the worker uses (same variables;
// no configuration: the embedded stack of `npm start`). docs/deploying.md "Deploying a new version".
import '../entry/supported-node';
import '../entry/load-env-file';
import { userInfo } from 'node:os';
import { loadConfig, type Config } from '../config';
import { openAuditLogWriter } from '../audit/open';
import { AUDIT_LOG, describeAuditLogSetting } from '../audit/setting';
import type { AuditEntry } from '../security/audit-chain';
import { loadWorkflowBundle } from '../worker/prebuilt-workflow-bundle';
import { openMerchantPayloadKeys } from '../keys/payload-codec';
import { connectClient } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import {
  bridgeGate,
  bridgeRunQueries,
  countBridgeRuns,
  isPostBridge,
  type BridgeScope,
} from '../temporal/bridge-release';
import {
  buildIdOf,
  makeCurrentVersion,
  nudgeRunsOnOtherBuilds,
  versionSearchValue,
  versionString,
  type DeploymentVersion,
} from '../temporal/worker-deployment';

export const DEPLOY_USAGE = `usage: npm run deploy -- <command> [--build-id <id>] [--bridge-build-id <id>]
  status              the deployment's versions: current, ramping, open runs on each
  promote             make the build current (default: this checkout's dist build; WORKER_BUILD_ID wins), then nudge
                      every open run on another build so it moves at its safe point; rollback = promote an older id;
                      a build after the bridge (0.9.0) is refused while a run is unversioned or on the bridge
  ramp <percent>      send <percent>% of new runs (and continue-as-new moves) to the build (0 stops the ramp);
                      a build after the bridge is refused while a run is unversioned
  nudge               signal upgradeCheck to every open run not on the build (after a manual switch or a ramp)
  --bridge-build-id   the bridge's build id in this deployment, if WORKER_BUILD_ID overrode it there`;

export interface DeployArgs {
  command: 'status' | 'promote' | 'ramp' | 'nudge';
  buildId?: string;
  bridgeBuildId?: string;
  percent?: number;
}

/** Parses the command line; a usage problem is an Error whose message is shown with DEPLOY_USAGE. */
export function parseDeployArgs(argv: string[]): DeployArgs {
  const [command, ...rest] = argv;
  let buildId: string | undefined;
  let bridgeBuildId: string | undefined;
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '--build-id') {
      buildId = rest[++i];
      if (!buildId) throw new Error('--build-id needs a value');
    } else if (rest[i] === '--bridge-build-id') {
      bridgeBuildId = rest[++i];
      if (!bridgeBuildId) throw new Error('--bridge-build-id needs a value');
    } else positional.push(rest[i]!);
  }
  if (command === 'ramp') {
    const percent = Number(positional[0]);
    if (positional.length !== 1 || !Number.isFinite(percent) || percent < 0 || percent > 100) {
      throw new Error('ramp needs a percentage from 0 to 100');
    }
    return { command, buildId, bridgeBuildId, percent };
  }
  if (command !== 'status' && command !== 'promote' && command !== 'nudge') {
    throw new Error(command ? `unknown command ${command}` : 'a command is required');
  }
  if (positional.length > 0) throw new Error(`unexpected argument ${positional[0]}`);
  return { command, buildId, bridgeBuildId };
}

async function main(argv: string[]): Promise<number> {
  let args: DeployArgs;
  try {
    args = parseDeployArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${DEPLOY_USAGE}\n`);
    return 2;
  }
  const config = loadConfig(process.env);
  const address = config.temporal.address ?? `127.0.0.1:${config.temporal.devServer.port}`;
  const namespace = config.temporal.namespace;
  const payloadKeys = await openMerchantPayloadKeys(config);
  const { client, connection } = await connectClient(
    { address, namespace, env: config.env },
    { dataConverter: createDataConverter(payloadKeys.codec) },
  ).catch(async (err: unknown) => {
    await payloadKeys.close();
    throw err;
  });
  try {
    const deploymentName = config.temporal.deployment.name;
    const buildId =
      args.buildId ?? config.temporal.deployment.buildId ?? buildIdOf(loadWorkflowBundle().manifest.inputsSha256);
    const version: DeploymentVersion = { deploymentName, buildId };
    const service = client.workflowService;
    const bridge: BridgeScope = {
      taskQueue: config.temporal.taskQueue,
      deploymentName,
      bridgeBuildId: args.bridgeBuildId,
    };
    if (args.command === 'status') {
      const { workerDeploymentInfo: info } = await service.describeWorkerDeployment({ namespace, deploymentName });
      const routing = info?.routingConfig;
      const current = routing?.currentDeploymentVersion?.buildId;
      const ramping = routing?.rampingDeploymentVersion?.buildId;
      process.stdout.write(`deployment ${deploymentName} (namespace ${namespace})\n`);
      for (const summary of info?.versionSummaries ?? []) {
        const id = summary.deploymentVersion?.buildId ?? '';
        const { count } = await client.workflow.count(
          `TemporalWorkerDeploymentVersion = '${versionSearchValue({ deploymentName, buildId: id })}' AND ExecutionStatus = 'Running'`,
        );
        const role =
          id === current ? 'current' : id === ramping ? `ramping ${routing?.rampingVersionPercentage ?? 0}%` : '';
        process.stdout.write(`  ${id.padEnd(24)} ${role.padEnd(14)} open runs ${count}\n`);
      }
      const { count: unversioned } = await client.workflow.count(
        `TaskQueue = '${config.temporal.taskQueue}' AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion IS NULL`,
      );
      process.stdout.write(`  ${'(unversioned)'.padEnd(24)} ${''.padEnd(14)} open runs ${unversioned}\n`);
      return 0;
    }
    if (args.command === 'ramp') {
      // A ramp routes unversioned runs too; runs pinned to the bridge move off it at their safe point (the drain).
      if (args.percent !== 0 && isPostBridge(buildId, bridge)) {
        const runs = await countBridgeRuns(client, bridge);
        if (runs.unversioned > 0) {
          process.stderr.write(
            `deploy: ${buildId} cannot ramp: ${runs.unversioned} unversioned run(s) are open. Promote the bridge ` +
              `release first (it takes them over), or list them: temporal workflow list --query ` +
              `"${bridgeRunQueries(bridge).unversioned}"\n`,
          );
          return 1;
        }
      }
      await recordDeploy(config, {
        actor: DEPLOY_ACTOR,
        action: 'deployment.ramp',
        target: { kind: 'deployment', id: deploymentName },
        details: {
          namespace,
          buildId: args.percent === 0 ? null : buildId,
          percent: args.percent ?? 0,
          osUser: osUser(),
        },
      });
      await service.setWorkerDeploymentRampingVersion({
        namespace,
        deploymentName,
        buildId: args.percent === 0 ? '' : buildId,
        percentage: args.percent ?? 0,
        identity: 'paylater-deploy',
      });
      process.stdout.write(`${versionString(version)} ramping at ${args.percent}%\n`);
      return 0;
    }
    if (args.command === 'promote') {
      const { refusal } = await bridgeGate(client, buildId, bridge);
      if (refusal !== undefined) {
        process.stderr.write(`deploy: ${refusal}\n`);
        return 1;
      }
      await recordDeploy(config, {
        actor: DEPLOY_ACTOR,
        action: 'deployment.promote',
        target: { kind: 'deployment', id: deploymentName },
        details: { namespace, buildId, osUser: osUser() },
      });
      await makeCurrentVersion(service, namespace, version, { identity: 'paylater-deploy' });
      process.stdout.write(`${versionString(version)} is current\n`);
    }
    const nudged = await nudgeRunsOnOtherBuilds(client, version, { taskQueue: config.temporal.taskQueue });
    process.stdout.write(
      `nudged ${nudged.signalled} open run(s) on other builds (${nudged.closed} closed meanwhile): each moves at its safe point\n`,
    );
    return 0;
  } finally {
    await connection.close();
    await payloadKeys.close();
  }
}

const DEPLOY_ACTOR: AuditEntry['actor'] = { kind: 'tool', name: 'deploy' };

/** The account the tool runs under as the machine names it (recorded, not authenticated: who can run it is). */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown'; // no passwd entry (a container's arbitrary uid)
  }
}

/**
 * Records a promotion or ramp in the audit trail (AUDIT_LOG) before Temporal is asked: when it cannot be recorded,
 * nothing is changed (docs/security.md#audit-trail).
 */
async function recordDeploy(config: Config, entry: AuditEntry): Promise<void> {
  let audit;
  try {
    audit = await openAuditLogWriter(config.audit);
  } catch (err) {
    throw new Error(
      `${AUDIT_LOG} (${describeAuditLogSetting(config.audit)}) cannot be opened, so nothing was changed: ${(err as Error).message}`,
    );
  }
  try {
    const record = await audit.append(entry);
    process.stdout.write(`audit record ${record.sequence} (${record.hash.slice(0, 12)})\n`);
  } catch (err) {
    throw new Error(`the audit trail cannot be written, so nothing was changed: ${(err as Error).message}`);
  } finally {
    await audit.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`deploy: ${(err as Error).message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
