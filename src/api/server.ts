// First: .env (src/entry/load-env-file.ts), then tracing, whose instrumentations must be registered before http and express
// are loaded.
import '../entry/supported-node';
import '../entry/load-env-file';
import { processTracing } from '../entry/tracing-preload';
import { runEntry, StartupError } from '../entry/run-entry';
import { openMerchantPayloadKeys } from '../keys/payload-codec';
import { openClient } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import { generatedKeyNotice, startListeners } from './listeners';
import { loadApiConfig } from '../config/api';

/**
 * `npm run api`: the two listeners alone (receiver on PORT, merchant facade on INTERNAL_PORT), for production
 * where the worker runs in its own processes. Stateless: scale it out behind a load balancer per listener.
 */
if (require.main === module) {
  runEntry(
    'api',
    async ({ config, logger, onShutdown, shutdown, stopSignal }) => {
      if (!config.temporal.address) {
        throw new StartupError(
          'A Temporal address is required for `npm run api`: set TEMPORAL_ADDRESS, or TEMPORAL_PROFILE to a ' +
            'profile with an address (use `npm start` for the embedded stack)',
        );
      }
      // Start in any order: listen at once; /readyz and the routes answer 503 until Temporal answers, the wait
      // is logged, and a namespace Temporal refuses stops the process.
      const payloadKeys = await openMerchantPayloadKeys(config).catch((err: Error) => {
        throw new StartupError(err.message);
      });
      onShutdown(() => payloadKeys.close());
      const payloadCodec = payloadKeys.codec;
      const { client, connection, ready } = openClient(
        { address: config.temporal.address, namespace: config.temporal.namespace, env: config.env },
        { dataConverter: createDataConverter(payloadCodec), tracing: processTracing(), logger, signal: stopSignal },
      );
      onShutdown(() => connection.close());
      ready.catch(async (err: unknown) => {
        if (stopSignal.aborted) return;
        process.stderr.write(`api: ${(err as Error).message}\n`);
        await shutdown(1);
      });
      // SIGTERM: /readyz 503 at once, SHUTDOWN_DRAIN_DELAY, then the listeners drain (src/api/drain.ts); the
      // Temporal connection, registered before, closes after them.
      const { publicUrl, internalUrl } = await startListeners({
        config,
        client,
        connection,
        logger,
        onShutdown,
        stopSignal,
        payloadCodec,
      });
      logger.info(
        {
          publicUrl,
          internalUrl,
          merchantKeys: config.merchantApiKeys.keys.map((k) => k.name),
          operatorKeys: config.operatorApiKeys.keys.map((k) => k.name),
        },
        `API listening: public (bank webhooks) ${publicUrl}, internal (merchant facade, /readyz, /metrics) ${internalUrl}`,
      );
      const notice = generatedKeyNotice(config, internalUrl);
      if (notice) process.stdout.write(`${notice}\n`);
    },
    // The API's client is the SDK's pure-JavaScript one: no native Temporal Runtime in this process.
    { load: loadApiConfig, temporalRuntime: false },
  );
}
