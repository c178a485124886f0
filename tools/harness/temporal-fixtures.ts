import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { bundleWorkflowCode, NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createPayloadCodec, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import { createDataConverter, FAILURE_CONVERTER_PATH } from '../../src/temporal/data-converter';
import { makeDeadlineBoundRetryInterceptor } from '../../src/temporal/grpc-retry';
import {
  tracingClientInterceptors,
  WORKFLOW_TRACING_INTERCEPTOR_MODULE,
  type Tracing,
} from '../../src/telemetry/tracing';

/**
 * The suite's PAYLOAD_ENCRYPTION_KEYS: a ring after one rotation (test-2 encrypts, test-1 still decrypts), so every
 * test runs encrypted, as production does. Test-only keys.
 */
export const TEST_PAYLOAD_ENCRYPTION_KEYS =
  'test-2:FBb6SfMGa/0ME0RhvhQyiY2SCXhTC0nqH/jzC7xbADI=,test-1:L4YMfOecsrgy9Mp71B2HPe8NXJmiSVZmGZIxmSICOmM=';
export const testPayloadCodec = createPayloadCodec(parsePayloadEncryptionKeys(TEST_PAYLOAD_ENCRYPTION_KEYS));
/** The data converter of the suite's clients and workers (createDataConverter, as every entry point builds it). */
export const testDataConverter: DataConverter = createDataConverter(testPayloadCodec);

/** Connections to the suite's real dev server (started once by test/setup/global-setup.ts). */
export interface TemporalTestContext {
  address: string;
  namespace: string;
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  /** The client's data converter: give it to every Worker of the test (withWorker and startTestWorker do). */
  dataConverter: DataConverter;
  /** A task queue of its own for each test file, so files running in parallel never steal each other's tasks. */
  taskQueue: string;
  close(): Promise<void>;
}

export async function connectTestTemporal(
  options: { dataConverter?: DataConverter; tracing?: Tracing } = {},
): Promise<TemporalTestContext> {
  const dataConverter = options.dataConverter ?? testDataConverter;
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run the tests through jest (global setup)');
  const namespace = 'default';
  // The same retry interceptor as the app's connection (src/temporal/connection.ts).
  const connection = await Connection.connect({ address, interceptors: [makeDeadlineBoundRetryInterceptor()] });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    namespace,
    connection,
    nativeConnection,
    dataConverter,
    // The app's client interceptors (src/temporal/connection.ts): none unless the test opted in to tracing.
    client: new Client({
      connection,
      namespace,
      dataConverter,
      interceptors: tracingClientInterceptors(options.tracing),
    }),
    taskQueue: `test-${randomUUID()}`,
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** Keeps webpack's bundling chatter out of test output; errors still show. */
export const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string) => console.error(message),
};

/** Workflow code bundled with the production failure converter (as buildWorkflowBundle bundles it). */
export function bundleWorkflows(
  workflowsPath: string,
  options: { tracingInterceptors?: boolean } = {},
): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath,
    failureConverterPath: FAILURE_CONVERTER_PATH,
    // As the prebuilt tracing bundle (src/worker/prebuilt-workflow-bundle.ts): the tests' workers carry them unless a
    // test asks for the plain bundle a worker without tracing runs (the load tests: the interceptors cost throughput).
    workflowInterceptorModules: options.tracingInterceptors === false ? [] : [WORKFLOW_TRACING_INTERCEPTOR_MODULE],
    logger: quietBundlerLogger,
  });
}
