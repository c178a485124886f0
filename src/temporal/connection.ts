import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { makeDeadlineBoundRetryInterceptor } from './grpc-retry';

export interface TemporalTarget {
  address: string;
  namespace: string;
  /** The environment read by @temporalio/envconfig for TEMPORAL_API_KEY, TEMPORAL_TLS_* and profiles. */
  env: Record<string, string | undefined>;
}

/** Connection options from @temporalio/envconfig, with the address we resolved (embedded or configured). */
function connectConfig(target: TemporalTarget) {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(target.env)) if (v !== undefined) env[k] = v;
  env.TEMPORAL_ADDRESS = target.address;
  env.TEMPORAL_NAMESPACE = target.namespace;
  return loadClientConnectConfig({ overrideEnvVars: env });
}

export class TemporalUnreachableError extends Error {
  constructor(address: string, cause: unknown) {
    super(
      `Cannot reach Temporal at ${address} (TEMPORAL_ADDRESS): ${(cause as Error)?.message ?? String(cause)}. ` +
        'Check the address, or unset TEMPORAL_ADDRESS to start the embedded dev server.',
    );
    this.name = 'TemporalUnreachableError';
  }
}

/**
 * The Temporal client of the API/receiver and of merchants' code (src/client.ts): `dataConverter` is
 * createDataConverter(...) (src/temporal/data-converter.ts), the same as the workers', so payloads are encrypted
 * before they leave the process and decrypted when they come back.
 */
export async function connectClient(
  target: TemporalTarget,
  options: { dataConverter: DataConverter },
): Promise<{ client: Client; connection: Connection }> {
  const { connectionOptions, namespace } = connectConfig(target);
  try {
    const connection = await Connection.connect({
      address: connectionOptions.address,
      tls: connectionOptions.tls,
      apiKey: connectionOptions.apiKey,
      metadata: connectionOptions.metadata,
      connectTimeout: 5_000,
      // The SDK's retries, but never an attempt after the caller's deadline (see grpc-retry.ts).
      interceptors: [makeDeadlineBoundRetryInterceptor()],
    });
    // Fail fast on a wrong namespace or credentials, not on the first merchant request.
    await connection.workflowService.describeNamespace({ namespace: namespace ?? target.namespace });
    return {
      client: new Client({
        connection,
        namespace: namespace ?? target.namespace,
        dataConverter: options.dataConverter,
      }),
      connection,
    };
  } catch (err) {
    throw new TemporalUnreachableError(target.address, err);
  }
}

export async function connectWorker(target: TemporalTarget): Promise<NativeConnection> {
  const { connectionOptions } = connectConfig(target);
  try {
    return await NativeConnection.connect(connectionOptions);
  } catch (err) {
    throw new TemporalUnreachableError(target.address, err);
  }
}

/** Readiness: the namespace answers within a short deadline. */
export async function checkTemporal(connection: Connection, namespace: string, timeoutMs = 2_000): Promise<void> {
  await connection.withDeadline(Date.now() + timeoutMs, () =>
    connection.workflowService.describeNamespace({ namespace }),
  );
}
