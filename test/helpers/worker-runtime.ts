import { DefaultLogger, Runtime } from '@temporalio/worker';
import { temporalMetricsOptions } from '../../src/worker/metrics';
import { freeLoopbackPort } from '../../src/temporal/free-port';

/**
 * Replaces the suite's Runtime (installed without an exporter) with a worker process's: the SDK's and the workflows'
 * series through its Prometheus exporter on a free loopback port, as src/entry/run-entry.ts installs it. Returns the
 * exporter's URL (a worker's runtimeMetricsUrl).
 */
export async function installWorkerRuntime(): Promise<string> {
  await Runtime.instance().shutdown();
  const runtimePort = await freeLoopbackPort();
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { metrics: temporalMetricsOptions(`127.0.0.1:${runtimePort}`) },
    // As the suite's (test/setup/quiet-runtime.ts): jest's processes end on SIGINT and SIGTERM.
    shutdownSignals: [],
  });
  return `http://127.0.0.1:${runtimePort}/metrics`;
}
