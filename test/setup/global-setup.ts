import { randomUUID } from 'node:crypto';
import { Runtime } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { watchParent } from '../../src/entry/parent-watch';
import { findTemporalCli, MISSING_BINARY_HELP } from '../../src/temporal/binaries';
import { ephemeralDevServerOptions } from '../../src/temporal/dev-server';

/**
 * One real Temporal dev server for the whole suite (the installed CLI; the SDK's download only where no
 * binary is installed). Test files reach it through TEMPORAL_TEST_ADDRESS. PAYLATER_TEST_RUN names this run's
 * shared build (test/helpers/build.ts), made by the first file that needs it and removed by the global teardown.
 */
export default async function globalSetup(): Promise<void> {
  endWithLauncher();
  process.env.PAYLATER_TEST_RUN ??= randomUUID().slice(0, 8);
  if (process.env.TEMPORAL_TEST_ADDRESS) return; // an existing server was given: use it as is
  const cli = findTemporalCli();
  if (!cli && process.env.CI) throw new Error(`No Temporal CLI installed. ${MISSING_BINARY_HELP}`);
  // The Runtime's default catches the first SIGINT and SIGTERM (to drain workers) and the process goes on: jest must
  // end on them (scripts/jest.mjs signals its group). The workers' Runtime: test/setup/quiet-runtime.ts.
  Runtime.install({ shutdownSignals: [] });
  const env = await TestWorkflowEnvironment.createLocal({ server: ephemeralDevServerOptions() });
  (globalThis as { __temporalEnv?: TestWorkflowEnvironment }).__temporalEnv = env;
  process.env.TEMPORAL_TEST_ADDRESS = env.address;
}

/**
 * Under `npm test` (scripts/jest.mjs, which names itself in PAYLATER_JEST_LAUNCHER_PID) this process leads a process
 * group holding everything the run starts. Should the launcher be killed without a word (SIGKILL), nothing would stop
 * that group: this process notices it is reparented (src/entry/parent-watch.ts) and kills the group, itself included.
 * SIGKILL, as there is no one left to wait for a graceful end and escalate.
 */
function endWithLauncher(): void {
  const launcherPid = Number(process.env.PAYLATER_JEST_LAUNCHER_PID);
  // Read once, before the workers start: no worker, nor a jest that a test starts, takes it for its own.
  delete process.env.PAYLATER_JEST_LAUNCHER_PID;
  if (!launcherPid) return;
  watchParent(
    () => {
      try {
        process.kill(-process.pid, 'SIGKILL');
      } catch {
        // not a group leader after all: nothing of ours to kill
      }
    },
    { parentPid: launcherPid },
  );
}
