import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers in tests log at WARN: state changes at INFO would bury the test output.
try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process by an earlier test file.
}
