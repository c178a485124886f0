import type { TestWorkflowEnvironment } from '@temporalio/testing';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { __temporalEnv?: TestWorkflowEnvironment };
  await holder.__temporalEnv?.teardown();
  delete holder.__temporalEnv;
}
