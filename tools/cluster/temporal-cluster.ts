import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { ManagedProcess } from '../harness/processes';
import { waitForHttp } from '../harness/processes';
import { startPostgres, type Postgres } from './postgres';
import {
  SPLIT_HISTORY_SHARDS,
  freeMembershipPort,
  runSetup,
  serverEnv,
  serverPorts,
  serverProcesses,
  temporalServer,
  type ClusterToolchain,
  type ClusterTopology,
  type ServerPorts,
} from './temporal-server';

/** Where the cluster's processes are kept as they start, so that a run stopped half-way can stop them. */
export interface ClusterProcesses {
  postgres?: Postgres;
  servers: ManagedProcess[];
}

export interface TemporalCluster {
  address: string;
  ports: ServerPorts;
  /** Each server process's Prometheus endpoint (PROMETHEUS_ENDPOINT), by process name; only when asked for. */
  metrics: Map<string, string>;
}

/**
 * A throwaway PostgreSQL, the Temporal server on it as one process or split into its services (`topology`), set up
 * by deploy/temporal/setup.sh (schema, then init: the script compose runs). `setupTwice` runs each step a second time
 * to show it is idempotent (the cluster test); `metrics` gives each server process a Prometheus endpoint.
 * Processes land in `into` as they start.
 */
export async function startTemporalCluster(o: {
  root: string;
  tools: ClusterToolchain;
  cli: string;
  topology: ClusterTopology;
  port: () => Promise<number>;
  logOf: (name: string) => string;
  runDir: string;
  namespace: string;
  into: ClusterProcesses;
  setupTwice?: boolean;
  metrics?: boolean;
}): Promise<TemporalCluster> {
  const steps = o.setupTwice ? 2 : 1;
  o.into.postgres = await startPostgres({
    binDir: o.tools.postgresBinDir,
    port: await o.port(),
    user: 'temporal',
    password: randomBytes(18).toString('base64url'),
    logFile: o.logOf('postgres'),
  });
  const pg = o.into.postgres;
  const schemaEnv = {
    PATH: process.env.PATH ?? '',
    POSTGRES_SEEDS: pg.host,
    DB_PORT: String(pg.port),
    POSTGRES_USER: pg.user,
    POSTGRES_PWD: pg.password,
    TEMPORAL_SQL_TOOL: o.tools.sqlTool,
    TEMPORAL_SCHEMA_DIR: o.tools.schemaDir,
  };
  // A second run leaves a set-up database as it is.
  for (let i = 0; i < steps; i++) await runSetup(o.root, 'schema', schemaEnv, o.logOf('setup'));
  const ports = await serverPorts(o.port);
  const address = `127.0.0.1:${ports.grpc}`;
  const baseEnv = {
    ...serverEnv(pg, ports, join(o.root, 'deploy', 'temporal', 'dynamicconfig.yaml')),
    ...(o.topology === 'split' ? { NUM_HISTORY_SHARDS: String(SPLIT_HISTORY_SHARDS) } : {}),
  };
  const history2 =
    o.topology === 'split'
      ? { grpc: await o.port(), membership: await freeMembershipPort(new Set(Object.values(ports.membership))) }
      : undefined;
  const metrics = new Map<string, string>();
  for (const [i, spec] of serverProcesses(o.topology, baseEnv, history2).entries()) {
    const env = { ...spec.env };
    if (o.metrics) {
      const endpoint = `127.0.0.1:${await o.port()}`;
      env.PROMETHEUS_ENDPOINT = endpoint;
      metrics.set(spec.name, endpoint);
    }
    const server = temporalServer(o.tools, env, o.logOf(spec.name), o.runDir, spec.services, spec.name);
    o.into.servers.push(server);
    server.start();
    // The first process writes the cluster's metadata record; others started with it race to write it too, and
    // the losers exit ("SaveClusterMetadata encountered version mismatch"). So the rest start once it serves.
    if (i === 0 && o.topology === 'split')
      await waitForHttp(`http://127.0.0.1:${ports.http}/api/v1/namespaces`, 120_000);
  }
  const initEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: o.namespace,
    TEMPORAL_CLI: o.cli,
    TEMPORAL_INIT_TIMEOUT_S: '180',
  };
  // A second run has nothing to create and still verifies.
  for (let i = 0; i < steps; i++) await runSetup(o.root, 'init', initEnv, o.logOf('setup'));
  return { address, ports, metrics };
}
