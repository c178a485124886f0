import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from '../telemetry/logging';
import * as sa from '../shared/search-attributes';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../shared/search-attributes';
import { findTemporalCli } from './binaries';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  spawnDevServer,
  type DevServerProcess,
  type DevServerProcessOptions,
} from './dev-server-process';

export interface DevServerOptions extends DevServerProcessOptions {
  logger: Logger;
  startTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts the Temporal CLI dev server as a child process with state in a SQLite file, and waits until its
 * frontend answers. stop() ends it with SIGTERM (SIGKILL after a grace period) so nothing is left behind.
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  return devServerReady(spawnDevServer(options), options);
}

/**
 * Waits until a spawned dev server (./dev-server-process.ts) answers, with the contract's search attributes
 * registered. A server that exits first (a port in use, most often) or does not answer in time is an error that
 * says what to do; the process is stopped then.
 */
export async function devServerReady(
  dev: DevServerProcess,
  options: Pick<DevServerOptions, 'namespace' | 'logger' | 'startTimeoutMs'>,
): Promise<DevServer> {
  const { address } = dev;
  const log = options.logger.child({ component: 'temporal-dev-server' });
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    const earlyExit = dev.earlyExit();
    if (earlyExit !== undefined) {
      await dev.stop();
      throw new Error(
        `Temporal dev server exited (code ${String(earlyExit)}) before it was ready. ` +
          `Is port ${dev.port} or ${dev.uiPort} in use? Set TEMPORAL_DEV_SERVER_PORT / TEMPORAL_UI_PORT, ` +
          `or TEMPORAL_ADDRESS to use a running server.\n${dev.output().trim()}`,
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
        await dev.stop();
        throw new Error(`Temporal dev server did not become ready at ${address}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  log.info({ address, dbFile: dev.dbFile }, 'Temporal dev server ready');
  return { address, uiUrl: dev.uiUrl, stop: () => dev.stop() };
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
