import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli, MISSING_BINARY_HELP } from '../../src/temporal/binaries';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';

/**
 * One real Temporal dev server for the whole suite (the installed CLI; the SDK's download only where no
 * binary is installed). Test files reach it through TEMPORAL_TEST_ADDRESS. PAYLATER_TEST_RUN names this run's
 * shared build (test/helpers/build.ts), made by the first file that needs it and removed by the global teardown.
 */
export default async function globalSetup(): Promise<void> {
  process.env.PAYLATER_TEST_RUN ??= randomUUID().slice(0, 8);
  if (process.env.TEMPORAL_TEST_ADDRESS) return; // an existing server was given: use it as is
  const cli = findTemporalCli();
  if (!cli && process.env.CI) throw new Error(`No Temporal CLI installed. ${MISSING_BINARY_HELP}`);
  const env = await TestWorkflowEnvironment.createLocal({ server: ephemeralDevServerOptions() });
  (globalThis as { __temporalEnv?: TestWorkflowEnvironment }).__temporalEnv = env;
  process.env.TEMPORAL_TEST_ADDRESS = env.address;
}
