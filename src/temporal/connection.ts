import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { makeDeadlineBoundRetryInterceptor } from './grpc-retry';
import { tracingClientInterceptors, type Tracing } from '../telemetry/tracing';
import { envForEnvconfig } from './profile';
import { isPermanentTemporalError, untilReachable, type WaitOptions } from './wait-for-temporal';

export interface TemporalTarget {
  /** config.temporal.address (from TEMPORAL_ADDRESS or the profile), or the embedded dev server's. */
  address: string;
  /** config.temporal.namespace (from TEMPORAL_NAMESPACE or the profile, else "default"). */
  namespace: string;
  /** The environment read by @temporalio/envconfig for TEMPORAL_API_KEY, TEMPORAL_TLS_* and the profile. */
  env: Record<string, string | undefined>;
}

/**
 * Connection options from @temporalio/envconfig (API key, TLS, gRPC metadata of the environment and the profile).
 * The address and namespace are the ones loadConfig resolved from the same sources (src/temporal/profile.ts), so
 * setting them here changes nothing but the embedded case, where the address is the dev server's.
 */
function connectConfig(target: TemporalTarget) {
  const env = envForEnvconfig(target.env);
  env.TEMPORAL_ADDRESS = target.address;
  env.TEMPORAL_NAMESPACE = target.namespace;
  return loadClientConnectConfig({ overrideEnvVars: env });
}

export class TemporalUnreachableError extends Error {
  constructor(address: string, cause: unknown) {
    super(
      `Cannot reach Temporal at ${address} (TEMPORAL_ADDRESS or the TEMPORAL_PROFILE's address): ` +
        `${(cause as Error)?.message ?? String(cause)}. Check the address, or unset it to start the embedded dev server.`,
    );
    this.name = 'TemporalUnreachableError';
  }
}

export class TemporalNamespaceError extends Error {
  constructor(namespace: string, cause: unknown) {
    super(
      `Temporal refused namespace "${namespace}" (TEMPORAL_NAMESPACE, TEMPORAL_API_KEY / TEMPORAL_TLS_*): ` +
        `${(cause as Error)?.message ?? String(cause)}`,
    );
    this.name = 'TemporalNamespaceError';
  }
}

/**
 * grpc-js backs off reconnection up to 120 s: after an outage the API would reach Temporal seconds after the
 * workers. A short, capped backoff brings it back within about a second of Temporal answering again.
 */
export const RECONNECT_CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1_000,
} as const;

export interface OpenedClient {
  client: Client;
  connection: Connection;
  /**
   * Resolves once the namespace answers (retrying with backoff while Temporal is unreachable); rejects with
   * TemporalNamespaceError when it never can (unknown namespace, credentials refused) or when `signal` aborts.
   */
  ready: Promise<void>;
}

/**
 * How a client is made: `dataConverter` is createDataConverter(...) (src/temporal/data-converter.ts), the same
 * as the workers', so payloads are encrypted before they leave the process and decrypted when they come back.
 */
export interface ClientOptions {
  dataConverter: DataConverter;
  /** The process's tracing (processTracing()): trace context in every start, update and signal; undefined: off. */
  tracing?: Tracing;
}

/** A client on a connection that connects at its first call (nothing is awaited here). */
function lazyClient(
  target: TemporalTarget,
  options: ClientOptions,
): { client: Client; connection: Connection; namespace: string } {
  const { connectionOptions, namespace: configured } = connectConfig(target);
  const namespace = configured ?? target.namespace;
  const connection = Connection.lazy({
    address: connectionOptions.address,
    tls: connectionOptions.tls,
    apiKey: connectionOptions.apiKey,
    metadata: connectionOptions.metadata,
    connectTimeout: 5_000,
    channelArgs: RECONNECT_CHANNEL_ARGS,
    // The SDK's retries, but never an attempt after the caller's deadline (see grpc-retry.ts).
    interceptors: [makeDeadlineBoundRetryInterceptor()],
  });
  return {
    client: new Client({
      connection,
      namespace,
      dataConverter: options.dataConverter,
      interceptors: tracingClientInterceptors(options.tracing),
    }),
    connection,
    namespace,
  };
}

/** Waits until the namespace answers; a wrong namespace or refused credentials reject at once. */
function namespaceReady(
  target: TemporalTarget,
  lazy: ReturnType<typeof lazyClient>,
  wait: Omit<WaitOptions, 'what'>,
): Promise<void> {
  return untilReachable(() => checkTemporal(lazy.connection, lazy.namespace), {
    ...wait,
    what: `Temporal at ${target.address} (namespace ${lazy.namespace})`,
  }).catch((err: unknown) => {
    throw isPermanentTemporalError(err) ? new TemporalNamespaceError(lazy.namespace, err) : err;
  });
}

/**
 * A client whose connection is opened lazily, for processes that serve before Temporal answers (the API:
 * `/readyz` says 503 and routes answer 503 until it does). Start in any order.
 */
export function openClient(target: TemporalTarget, options: ClientOptions & Omit<WaitOptions, 'what'>): OpenedClient {
  const { dataConverter, tracing, ...wait } = options;
  const lazy = lazyClient(target, { dataConverter, tracing });
  const ready = namespaceReady(target, lazy, wait);
  // Observed by the caller; never an unhandled rejection when it only uses `client`.
  ready.catch(() => undefined);
  return { client: lazy.client, connection: lazy.connection, ready };
}

/**
 * A client connected now. With `wait`, an unreachable Temporal is waited for with backoff; without, the first
 * failure throws TemporalUnreachableError (tests, tools). A wrong namespace or credentials fail at once.
 */
export async function connectClient(
  target: TemporalTarget,
  options: ClientOptions & { wait?: Omit<WaitOptions, 'what'> },
): Promise<{ client: Client; connection: Connection }> {
  const { wait } = options;
  const lazy = lazyClient(target, options);
  try {
    if (wait) await namespaceReady(target, lazy, wait);
    else await checkTemporal(lazy.connection, lazy.namespace, 5_000);
    return { client: lazy.client, connection: lazy.connection };
  } catch (err) {
    await lazy.connection.close().catch(() => undefined);
    if (err instanceof TemporalNamespaceError) throw err;
    if (isPermanentTemporalError(err)) throw new TemporalNamespaceError(lazy.namespace, err);
    throw new TemporalUnreachableError(target.address, err);
  }
}

/**
 * The worker's connection. With `wait`, retried with backoff until Temporal answers (start in any order);
 * the namespace is checked on it, so a wrong one fails at start rather than in the pollers.
 */
export async function connectWorker(
  target: TemporalTarget,
  wait?: Omit<WaitOptions, 'what'>,
): Promise<NativeConnection> {
  const { connectionOptions, namespace: configured } = connectConfig(target);
  const namespace = configured ?? target.namespace;
  const attempt = async () => {
    const connection = await NativeConnection.connect(connectionOptions);
    try {
      await connection.workflowService.describeNamespace({ namespace });
      return connection;
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  };
  try {
    return wait
      ? await untilReachable(attempt, { ...wait, what: `Temporal at ${target.address} (namespace ${namespace})` })
      : await attempt();
  } catch (err) {
    if (isPermanentTemporalError(err)) throw new TemporalNamespaceError(namespace, err);
    throw new TemporalUnreachableError(target.address, err);
  }
}

/** Readiness: the namespace answers within a short deadline. */
export async function checkTemporal(connection: Connection, namespace: string, timeoutMs = 2_000): Promise<void> {
  await connection.withDeadline(Date.now() + timeoutMs, () =>
    connection.workflowService.describeNamespace({ namespace }),
  );
}
