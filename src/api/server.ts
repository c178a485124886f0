import type { Client, Connection } from '@temporalio/client';
import { runEntry } from '../bootstrap';
import type { Config } from '../config';
import type { Logger } from '../logging';
import { createPayloadCodec } from '../security/payload-codec';
import { checkTemporal, connectClient } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import { StartupError } from '../bootstrap';
import { createApp } from './app';
import { boundPort, closeServer, listen } from './http-server';
import { createMetrics } from './metrics';

/** The app wired from configuration: used by `npm run api` and by `npm start`. */
export function createAppFromConfig(deps: { config: Config; client: Client; connection: Connection; logger: Logger }) {
  const { config } = deps;
  return createApp({
    client: deps.client,
    taskQueue: config.temporal.taskQueue,
    webhooks: config.webhooks,
    transactionsCallbackUrl: config.transactionsCallbackUrl,
    logger: deps.logger,
    metrics: createMetrics(),
    checkTemporal: () => checkTemporal(deps.connection, config.temporal.namespace),
  });
}

/**
 * `npm run api`: the Express app alone (receiver + merchant facade), for production where the worker runs
 * in its own processes. Stateless: scale it out behind a load balancer.
 */
if (require.main === module) {
  runEntry('api', async ({ config, logger, onShutdown }) => {
    if (!config.temporal.address) {
      throw new StartupError('TEMPORAL_ADDRESS is required for `npm run api` (use `npm start` for the embedded stack)');
    }
    const { client, connection } = await connectClient(
      { address: config.temporal.address, namespace: config.temporal.namespace, env: config.env },
      { dataConverter: createDataConverter(createPayloadCodec(config.payloadEncryption.keys)) },
    );
    onShutdown(() => connection.close());
    const app = createAppFromConfig({ config, client, connection, logger });
    const server = await listen(app, config.port);
    onShutdown(() => closeServer(server));
    logger.info({ port: boundPort(server) }, `API listening on http://localhost:${boundPort(server)}`);
  });
}
