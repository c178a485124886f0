import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from '../telemetry/logging';
import * as sa from '../shared/search-attributes';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../shared/search-attributes';
import { findTemporalCli } from './binaries';

export interface DevServerOptions {
  cliPath: string;
  port: number;
  uiPort: number;
  /** Folder of the SQLite file (created if missing), relative to `cwd`. */
  dataDir: string;
  cwd: string;
  namespace: string;
  logger: Logger;
  startTimeoutMs?: number;
  /**
   * The codec endpoint the Web UI calls to decode payloads (`--ui-codec-endpoint`): `<internal listener URL>/codec`
   * (src/api/routes/codec.ts). Unset: the UI shows encrypted payloads as they are stored.
   */
  uiCodecEndpoint?: string;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  stop(): Promise<void>;
}

/**
 * Dynamic config the product needs: update-with-start is a multi-operation, off by default on some
 * server versions (issue 4); task-queue fairness (the new matcher, and fairness on it) gives each
 * merchant its share of the bank-reads queue (src/shared/task-queues.ts bankReadPriority); off, the fairness keys
 * are ignored and the queue is first come, first served.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = [
  'frontend.enableExecuteMultiOperation=true',
  'frontend.enableUpdateWorkflowExecution=true',
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
  'matching.useNewMatcher=true',
  'matching.enableFairness=true',
  // Worker Versioning: what deploy/temporal/dynamicconfig.yaml writes out (the defaults of Server 1.32).
  'system.enableDeploymentVersions=true',
  'system.enableSendTargetVersionChanged=true',
];

export function devServerArgs(
  options: Pick<DevServerOptions, 'port' | 'uiPort' | 'namespace' | 'uiCodecEndpoint'> & { dbFile?: string },
): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
  ];
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (options.namespace !== 'default') args.push('--namespace', options.namespace);
  if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Keyword`);
  for (const name of DATETIME_SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Datetime`);
  for (const kv of DEV_SERVER_DYNAMIC_CONFIG) args.push('--dynamic-config-value', kv);
  args.push('--log-level', 'warn');
  return args;
}

/**
 * Starts the Temporal CLI dev server as a child process with state in a SQLite file, and waits until its
 * frontend answers. stop() ends it with SIGTERM (SIGKILL after a grace period) so nothing is left behind.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const dataDir = isAbsolute(options.dataDir) ? options.dataDir : join(options.cwd, options.dataDir);
  // Owner only, like the sandbox state beside it (src/sandbox/persistence.ts): development customer data.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const dbFile = join(dataDir, 'temporal.db');
  const address = `127.0.0.1:${options.port}`;
  const log = options.logger.child({ component: 'temporal-dev-server' });

  const child: ChildProcess = spawn(options.cliPath, devServerArgs({ ...options, dbFile }), {
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Last resort if the parent exits without calling stop(): never leave the server orphaned.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  let earlyExit: number | null | undefined;
  void exited.then((code) => (earlyExit = code));
  for (;;) {
    if (earlyExit !== undefined) {
      throw new Error(
        `Temporal dev server exited (code ${String(earlyExit)}) before it was ready. ` +
          `Is port ${options.port} or ${options.uiPort} in use? Set TEMPORAL_DEV_SERVER_PORT / TEMPORAL_UI_PORT, ` +
          `or TEMPORAL_ADDRESS to use a running server.\n${output.trim()}`,
      );
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace: options.namespace });
        await registerMissingSearchAttributes(connection, options.namespace);
        break;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`Temporal dev server did not become ready at ${address}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  log.info({ address, dbFile }, 'Temporal dev server ready');
  return { address, uiUrl: `http://localhost:${options.uiPort}`, stop };
}

/** Every contract search attribute with its registered type (the Keyword names, then the Datetime ones). */
export function contractSearchAttributeTypes(): Record<string, temporal.api.enums.v1.IndexedValueType> {
  const { IndexedValueType } = temporal.api.enums.v1;
  return {
    ...Object.fromEntries(SEARCH_ATTRIBUTE_NAMES.map((name) => [name, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
    ...Object.fromEntries(
      DATETIME_SEARCH_ATTRIBUTE_NAMES.map((name) => [name, IndexedValueType.INDEXED_VALUE_TYPE_DATETIME]),
    ),
  };
}

/**
 * Registers the contract's search attributes the namespace lacks. `--search-attribute` registers them only when the
 * SQLite file is new: a data folder from an earlier version (before FinanceApplicationCreatedAt) would otherwise
 * refuse every start that sets the attribute and every listing that filters on it. Returns the names added.
 */
export async function registerMissingSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const wanted = contractSearchAttributeTypes();
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = Object.fromEntries(Object.entries(wanted).filter(([name]) => !(name in (customAttributes ?? {}))));
  if (Object.keys(missing).length > 0) {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
  }
  return Object.keys(missing);
}

/**
 * Options for the SDK's ephemeral dev server (`TestWorkflowEnvironment.createLocal({ server })`) used by the
 * test suite and the benchmarks: the installed CLI (the SDK's download only where none is installed), the
 * contract's search attributes and the same dynamic config as the embedded server.
 */
export function ephemeralDevServerOptions() {
  const cli = findTemporalCli();
  return {
    executable: cli ? { type: 'existing-path' as const, path: cli } : { type: 'cached-download' as const },
    ip: '127.0.0.1',
    searchAttributes: sa.SEARCH_ATTRIBUTE_KEYS,
    extraArgs: [...DEV_SERVER_DYNAMIC_CONFIG.flatMap((kv) => ['--dynamic-config-value', kv]), '--log-level', 'error'],
  };
}
