// First: .env (src/entry/load-env-file.ts), then tracing, whose instrumentations must be registered before http and express
// are loaded.
import './entry/supported-node';
import './entry/load-env-file';
import { processTracing } from './entry/tracing-preload';
import { runEntry, StartupError } from './entry/run-entry';
import { prebuiltWorkflowBundle } from './worker/prebuilt-workflow-bundle';
import { openMerchantPayloadKeys } from './keys/payload-codec';
import { connectWorker } from './temporal/connection';
import { createDataConverter } from './temporal/data-converter';
import { startWorker } from './worker/factory';
import { temporalMetricsOptions } from './worker/metrics';
import { loadWorkerConfig } from './config/worker';
import { bootstrapCurrentVersion, versionString } from './temporal/worker-deployment';

/** `npm run worker`: a worker process alone, for production (stateless; scale out). */
if (require.main === module) {
  runEntry(
    'worker',
    async ({ config, logger, onShutdown, shutdown, stopSignal, runtimeMetricsUrl }) => {
      if (!config.temporal.address) {
        throw new StartupError(
          'A Temporal address is required for `npm run worker`: set TEMPORAL_ADDRESS, or TEMPORAL_PROFILE to a ' +
            'profile with an address (use `npm start` for the embedded stack)',
        );
      }
      if (!config.bank.authUrl || !config.bank.baseUrl) {
        throw new StartupError('BANK_BASE_URL and BANK_AUTH_URL are required for `npm run worker`');
      }
      // Checked before connecting: a missing or stale bundle is a deploy mistake, not a Temporal problem.
      const { workflowBundle, buildId } = prebuiltWorkflowBundle(logger, { tracing: processTracing() !== undefined });
      // The merchants' payload keys: a key store that cannot be opened stops start-up, naming MERCHANT_KEY_STORE.
      const payloadKeys = await openMerchantPayloadKeys(config).catch((err: Error) => {
        throw new StartupError(err.message);
      });
      onShutdown(() => payloadKeys.close());
      // Start in any order: an unreachable Temporal is waited for (logged), a wrong namespace fails at once.
      const connection = await connectWorker(
        { address: config.temporal.address, namespace: config.temporal.namespace, env: config.env },
        { logger, signal: stopSignal },
      );
      onShutdown(() => connection.close());
      const running = await startWorker({
        config,
        logger,
        connection,
        bank: { authUrl: config.bank.authUrl, baseUrl: config.bank.baseUrl },
        dataConverter: createDataConverter(payloadKeys.codec),
        workflowBundle,
        buildId,
        tracing: processTracing(),
        runtimeMetricsUrl,
        stopSignal,
      });
      // SIGTERM: /readyz 503, no more polling, running activities get WORKER_SHUTDOWN_GRACE_TIME (then cancelled and
      // retried on another worker), workflow tasks finish; then the connection closes and the process exits 0.
      onShutdown(() => running.stop());
      running.done.catch(async (err: unknown) => {
        logger.fatal({ err }, 'worker failed');
        await shutdown(1);
      });
      // A fresh deployment's first build makes itself current; any later one waits for the deploy procedure.
      if (running.deployment) {
        const deployment = running.deployment;
        bootstrapCurrentVersion(
          connection.workflowService,
          config.temporal.namespace,
          deployment,
          config.temporal.taskQueue,
          {
            signal: stopSignal,
          },
        ).then(
          (outcome) => {
            const version = versionString(deployment);
            if (outcome === 'made-current') logger.info({ version }, 'first build of the deployment: made current');
            else if (outcome === 'unversioned-runs-open')
              logger.warn(
                { version },
                'runs from before Worker Versioning are open and no version is current: run `npm run replay-check`, ' +
                  'then `npm run deploy -- promote` to make this build current (docs/deploying.md)',
              );
            else
              logger.info(
                { version },
                'waiting to be made current by the deploy procedure (npm run deploy -- promote)',
              );
          },
          (err: unknown) => logger.warn({ err }, "could not check the deployment's current version"),
        );
      }
    },
    { load: loadWorkerConfig, runtimeMetrics: temporalMetricsOptions },
  );
}
