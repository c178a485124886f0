import { rmSync } from 'node:fs';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { sharedBuildDir } from '../helpers/build';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { __temporalEnv?: TestWorkflowEnvironment };
  await holder.__temporalEnv?.teardown();
  delete holder.__temporalEnv;
  if (process.env.PAYLATER_TEST_RUN) rmSync(sharedBuildDir(), { recursive: true, force: true });
}
