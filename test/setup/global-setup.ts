import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli, MISSING_BINARY_HELP } from '../../src/temporal/binaries';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../src/temporal/dev-server';
import * as sa from '../../src/shared/search-attributes';

/**
 * One real Temporal dev server for the whole suite (the installed CLI; the SDK's download only where no
 * binary is installed). Test files reach it through TEMPORAL_TEST_ADDRESS.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.TEMPORAL_TEST_ADDRESS) return; // an existing server was given: use it as is
  const cli = findTemporalCli();
  if (!cli && process.env.CI) throw new Error(`No Temporal CLI installed. ${MISSING_BINARY_HELP}`);
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' },
      ip: '127.0.0.1',
      searchAttributes: [
        sa.MerchantReference,
        sa.FinanceApplicationId,
        sa.FinanceApplicationStatus,
        sa.ConsentId,
        sa.RefreshTaskId,
      ],
      extraArgs: [...DEV_SERVER_DYNAMIC_CONFIG.flatMap((kv) => ['--dynamic-config-value', kv]), '--log-level', 'error'],
    },
  });
  (globalThis as { __temporalEnv?: TestWorkflowEnvironment }).__temporalEnv = env;
  process.env.TEMPORAL_TEST_ADDRESS = env.address;
}
