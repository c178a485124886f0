import { runEntry, StartupError } from './bootstrap';
import { boundPort, closeServer, listen } from './api/http-server';
import { createAppFromConfig } from './api/server';
import { startSandbox } from './sandbox';
import { createPayloadCodec } from './security/payload-codec';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from './temporal/binaries';
import { connectClient, connectWorker } from './temporal/connection';
import { createDataConverter } from './temporal/data-converter';
import { startDevServer } from './temporal/dev-server';
import { prebuiltWorkflowBundle } from './prebuilt-workflow-bundle';
import { startWorker, type BankEndpoints } from './worker';

/**
 * `npm start`: the whole stack in one process tree. With nothing configured: the Temporal dev server
 * (Web UI, SQLite state under data/), the bank sandbox, the worker and the Express app. TEMPORAL_ADDRESS
 * and BANK_BASE_URL switch to an existing server and the real bank.
 */
runEntry('paylater', async ({ config, logger, onShutdown, shutdown, stopping }) => {
  // First: a missing or stale bundle stops start-up before any server is started.
  const workflowBundle = prebuiltWorkflowBundle(logger);
  let address = config.temporal.address;
  let uiUrl: string | undefined;
  if (!address) {
    const cliPath = findTemporalCli(config.env);
    if (!cliPath) throw new StartupError(`No Temporal CLI found for the embedded dev server. ${MISSING_BINARY_HELP}`);
    const dev = await startDevServer({
      cliPath,
      port: config.temporal.devServer.port,
      uiPort: config.temporal.devServer.uiPort,
      dataDir: config.temporal.devServer.dataDir,
      cwd: projectRoot(),
      namespace: config.temporal.namespace,
      logger,
    });
    onShutdown(() => dev.stop());
    address = dev.address;
    uiUrl = dev.uiUrl;
  }
  const target = { address, namespace: config.temporal.namespace, env: config.env };
  // One codec for the process: the client, the worker (and the codec endpoint, once mounted) share it.
  const payloadCodec = createPayloadCodec(config.payloadEncryption.keys);
  const dataConverter = createDataConverter(payloadCodec);
  const { client, connection } = await connectClient(target, { dataConverter });
  onShutdown(() => connection.close());
  const nativeConnection = await connectWorker(target);
  onShutdown(() => nativeConnection.close());

  // The app first: the embedded sandbox needs its address for the account Webhook Endpoint.
  const app = createAppFromConfig({ config, client, connection, logger });
  const server = await listen(app, config.port);
  onShutdown(() => closeServer(server));
  const apiUrl = `http://localhost:${boundPort(server)}`;

  let bank: BankEndpoints;
  let sandboxUrl: string | undefined;
  if (config.bank.embedded) {
    const sandbox = await startSandbox(
      {
        clientId: config.bank.clientId,
        clientSecret: config.bank.clientSecret,
        accountWebhook: {
          endpoint: `${config.webhooks.publicBaseUrl}/webhooks/accounts`,
          securityHeader: config.webhooks.securityHeader,
          // The real bank activates webhooks from the next full hour; the demo shows them at once.
          activation: 'immediate',
        },
        lifecycle: { stepMs: 10_000 },
        logger: logger.child({ component: 'bank-sandbox' }),
      },
      { port: config.bank.sandboxPort, host: '127.0.0.1' },
    );
    onShutdown(() => sandbox.close());
    bank = { authUrl: sandbox.url, baseUrl: sandbox.url };
    sandboxUrl = sandbox.url;
  } else {
    bank = { authUrl: config.bank.authUrl!, baseUrl: config.bank.baseUrl! };
  }

  const worker = await startWorker({
    config,
    logger,
    connection: nativeConnection,
    bank,
    dataConverter,
    workflowBundle,
  });
  onShutdown(() => worker.stop());
  worker.done.catch(async (err: unknown) => {
    logger.fatal({ err }, 'worker failed');
    await shutdown(1);
  });

  const lines = [
    '',
    'Pay-later integration is running:',
    `  API and webhook receiver  ${apiUrl}   (readiness: ${apiUrl}/readyz)`,
    uiUrl
      ? `  Temporal Web UI           ${uiUrl}`
      : `  Temporal                  ${address} (namespace ${config.temporal.namespace})`,
    sandboxUrl
      ? `  Bank sandbox              ${sandboxUrl}   (ground truth: ${sandboxUrl}/_sandbox)`
      : `  Bank                      ${bank.baseUrl}`,
    `  Task queue                ${config.temporal.taskQueue}`,
    'Try:',
    `  curl -s -X POST ${apiUrl}/applications -H 'content-type: application/json' \\`,
    `       -d '{"merchantReference":"order-1001","redirectUrl":"https://shop.example/return"}'`,
    `  curl -s ${apiUrl}/applications/order-1001`,
    'Ctrl-C stops everything.',
    '',
  ];
  if (!(await Promise.race([stopping.then(() => true), Promise.resolve(false)]))) {
    process.stdout.write(`${lines.join('\n')}\n`);
  }
});
