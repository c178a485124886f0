import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ManagedProcess } from '../harness/processes';
import type { Postgres } from './postgres';

/**
 * The Postgres-backed Temporal server of `npm run test:cluster`: the binaries and files the project's toolchain
 * script provides (`node scripts/temporal-toolchain.mjs cluster`), the server started on the env-templated config
 * its own image runs with (config/docker.yaml of the server module), and deploy/temporal/setup.sh — the script
 * compose runs — for the schemas and the namespace with its search attributes.
 */

export interface ClusterToolchain {
  version: string;
  server: string;
  sqlTool: string;
  /** TEMPORAL_SCHEMA_DIR for setup.sh (holds postgresql/v12/...). */
  schemaDir: string;
  configTemplate: string;
  postgresBinDir: string;
}

/** Runs the toolchain script (builds the server binaries on first use: minutes), returning its paths. */
export function clusterToolchain(root: string): ClusterToolchain {
  const result = spawnSync(process.execPath, [join(root, 'scripts', 'temporal-toolchain.mjs'), 'cluster'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'], // the build's progress goes straight to the terminal
  });
  if (result.status !== 0) throw new Error('node scripts/temporal-toolchain.mjs cluster failed (see above)');
  return JSON.parse(result.stdout) as ClusterToolchain;
}

export interface ServerPorts {
  grpc: number;
  http: number;
  internalHttp: number;
  membership: { frontend: number; history: number; matching: number; worker: number };
  service: { history: number; matching: number; worker: number };
}

/**
 * The SQL stores keep each host's membership port in a smallint column (cluster_membership.rpc_port): a
 * membership port above 32767 makes every service fail at start ("value out of range for type smallint").
 * Ports the OS hands out (32768 and up on Linux) cannot be used for these; a free one below is picked instead.
 */
export async function freeMembershipPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (taken.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) {
      taken.add(port);
      return port;
    }
  }
}

export async function serverPorts(next: () => Promise<number>): Promise<ServerPorts> {
  const taken = new Set<number>();
  const low = () => freeMembershipPort(taken);
  return {
    grpc: await next(),
    http: await next(),
    internalHttp: await next(),
    membership: { frontend: await low(), history: await low(), matching: await low(), worker: await low() },
    service: { history: await next(), matching: await next(), worker: await next() },
  };
}

/** The environment config/docker.yaml reads (the variables the server image and compose use). */
export function serverEnv(pg: Postgres, ports: ServerPorts, dynamicConfig: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '',
    DB: 'postgres12',
    POSTGRES_SEEDS: pg.host,
    DB_PORT: String(pg.port),
    // The template reads the visibility store's port from POSTGRES_PORT, not DB_PORT.
    POSTGRES_PORT: String(pg.port),
    POSTGRES_USER: pg.user,
    POSTGRES_PWD: pg.password,
    DYNAMIC_CONFIG_FILE_PATH: dynamicConfig,
    BIND_ON_IP: '127.0.0.1',
    FRONTEND_GRPC_PORT: String(ports.grpc),
    FRONTEND_HTTP_PORT: String(ports.http),
    INTERNAL_FRONTEND_HTTP_PORT: String(ports.internalHttp),
    FRONTEND_MEMBERSHIP_PORT: String(ports.membership.frontend),
    HISTORY_GRPC_PORT: String(ports.service.history),
    HISTORY_MEMBERSHIP_PORT: String(ports.membership.history),
    MATCHING_GRPC_PORT: String(ports.service.matching),
    MATCHING_MEMBERSHIP_PORT: String(ports.membership.matching),
    WORKER_GRPC_PORT: String(ports.service.worker),
    WORKER_MEMBERSHIP_PORT: String(ports.membership.worker),
    LOG_LEVEL: 'warn',
  };
}

export function temporalServer(
  tools: ClusterToolchain,
  env: NodeJS.ProcessEnv,
  logFile: string,
  cwd: string,
  services: readonly TemporalService[] = [],
  name = 'temporal-server',
): ManagedProcess {
  return new ManagedProcess(
    name,
    tools.server,
    ['--config-file', tools.configTemplate, '--allow-no-auth', 'start', ...services.flatMap((s) => ['--service', s])],
    env,
    logFile,
    cwd,
  );
}

export type TemporalService = 'frontend' | 'history' | 'matching' | 'worker';

/**
 * CLUSTER_TOPOLOGY: `single` (one process, every service: the quick run CI does) or `split` (production's shape:
 * a frontend, two history processes, a matching and a worker service, each its own process; they find each other
 * through the cluster_membership table, as on several hosts).
 */
export type ClusterTopology = 'single' | 'split';

/**
 * History shards: fixed when the cluster is created and never changed after. 4 (the template's default) for the quick
 * single-process run; 512 when split, production's order of magnitude: enough to spread over tens of history hosts
 * later (shards move between history processes, a shard never splits), few enough that two processes on a small
 * machine acquire them all within a minute.
 */
export const SPLIT_HISTORY_SHARDS = 512;

export interface ServerProcessSpec {
  name: string;
  services: TemporalService[];
  /** Ports of this process's own services, over the shared environment (a second history process has its own). */
  env: NodeJS.ProcessEnv;
}

/** The server processes of a topology over `base` (serverEnv); a split's second history gets `history2` ports. */
export function serverProcesses(
  topology: ClusterTopology,
  base: NodeJS.ProcessEnv,
  history2?: { grpc: number; membership: number },
): ServerProcessSpec[] {
  if (topology === 'single') return [{ name: 'temporal-server', services: [], env: base }];
  if (!history2) throw new Error('a split cluster needs the second history process its ports');
  return [
    { name: 'temporal-frontend', services: ['frontend'], env: base },
    { name: 'temporal-history-1', services: ['history'], env: base },
    {
      name: 'temporal-history-2',
      services: ['history'],
      env: { ...base, HISTORY_GRPC_PORT: String(history2.grpc), HISTORY_MEMBERSHIP_PORT: String(history2.membership) },
    },
    { name: 'temporal-matching', services: ['matching'], env: base },
    { name: 'temporal-worker', services: ['worker'], env: base },
  ];
}

/** Runs deploy/temporal/setup.sh with `step`; rejects with its exit code (its output goes to `logFile`). */
export function runSetup(root: string, step: 'schema' | 'init', env: NodeJS.ProcessEnv, logFile: string) {
  return new Promise<void>((resolve, reject) => {
    const fd = openSync(logFile, 'a');
    const child = spawn('/bin/sh', [join(root, 'deploy', 'temporal', 'setup.sh'), step], {
      cwd: root,
      env,
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`setup.sh ${step} exited ${code ?? signal}; see ${logFile}`)),
    );
  });
}
