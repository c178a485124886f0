import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log at WARN: state changes at INFO would bury the test output. No shutdown signals: the Runtime's
// default catches the first SIGINT and SIGTERM and the process goes on, where jest's workers must end on them
// (scripts/jest.mjs signals their group; test/setup/global-setup.ts does the same in jest's main process).
try {
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
} catch {
  // Already installed in this process by an earlier test file.
}
