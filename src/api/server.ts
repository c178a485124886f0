import { runEntry } from '../bootstrap';
import { checkTemporal, connectClient } from '../temporal/connection';
import { StartupError } from '../bootstrap';
import { createApp } from './app';
import { boundPort, closeServer, listen } from './http-server';
import { createMetrics } from './metrics';

/**
 * `npm run api`: the Express app alone (receiver + merchant facade), for production where the worker runs
 * in its own processes. Stateless: scale it out behind a load balancer.
 */
if (require.main === module) {
  runEntry('api', async ({ config, logger, onShutdown }) => {
    if (!config.temporal.address) {
      throw new StartupError('TEMPORAL_ADDRESS is required for `npm run api` (use `npm start` for the embedded stack)');
    }
    const { client, connection } = await connectClient({
      address: config.temporal.address,
      namespace: config.temporal.namespace,
      env: config.env,
    });
    onShutdown(() => connection.close());
    const app = createApp({
      client,
      taskQueue: config.temporal.taskQueue,
      webhooks: config.webhooks,
      transactionsCallbackUrl: config.transactionsCallbackUrl,
      logger,
      metrics: createMetrics(),
      checkTemporal: () => checkTemporal(connection, config.temporal.namespace),
    });
    const server = await listen(app, config.port);
    onShutdown(() => closeServer(server));
    logger.info({ port: boundPort(server) }, `API listening on http://localhost:${boundPort(server)}`);
  });
}
