// First: the Node version check (src/entry/supported-node.ts), then Node's compile cache (src/entry/compile-cache.ts), .env (src/entry/load-env-file.ts), then tracing, whose
// instrumentations must be registered before http and express are loaded, then the dev server's spawn, so that it
// boots while the modules below load (src/entry/early-dev-server.ts).
import './entry/supported-node';
import './entry/compile-cache';
import './entry/load-env-file';
import { processTracing } from './entry/tracing-preload';
import { devServerProcessOptions, early, releaseEarlySignals, uiCodecGatewayPort } from './entry/early-dev-server';
import { runEntry, StartupError, type EntryContext } from './entry/run-entry';
import { generatedKeyNotice, startListeners } from './api/listeners';
import { startSandbox } from './sandbox';
import { openMerchantPayloadKeys } from './keys/payload-codec';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from './temporal/binaries';
import { connectClient, connectWorker } from './temporal/connection';
import { createDataConverter } from './temporal/data-converter';
import { devServerReady } from './temporal/dev-server';
import { spawnDevServer } from './temporal/dev-server-process';
import { prebuiltWorkflowBundle } from './worker/prebuilt-workflow-bundle';
import { startWorker, type BankEndpoints } from './worker/factory';
import { temporalMetricsOptions } from './worker/metrics';
import { loadMainConfig, type MainConfig } from './config/main';
import { merchantsOnDevelopmentSecret } from './config/resolve';
import { readCallbackSecretGenerations } from './client/merchant-secrets';
import { shownSigningSecrets } from './security/merchant-signing-secret';
import {
  makeCurrentVersion,
  versionString,
  warnAboutOtherBuilds,
  type DeploymentVersion,
} from './temporal/worker-deployment';
import type { Client } from '@temporalio/client';
import { bridgeGate } from './temporal/bridge-release';
import { happyPath } from './shared/application-settings';
import { sandboxStateFile } from './sandbox/persistence';

type Context = EntryContext<MainConfig>;

/** The embedded dev server when no Temporal address is configured: its address and Web UI. */
async function temporalAddress({ config, logger, onShutdown }: Context): Promise<{ address: string; uiUrl?: string }> {
  if (config.temporal.address) return { address: config.temporal.address };
  const cliPath = findTemporalCli(config.env);
  if (!cliPath) throw new StartupError(`No Temporal CLI found for the embedded dev server. ${MISSING_BINARY_HELP}`);
  // Spawned before the modules loaded (src/entry/early-dev-server.ts); here only when that did not happen.
  const spawned = early.devServer ?? spawnDevServer(devServerProcessOptions(config, cliPath));
  const dev = await devServerReady(spawned, { namespace: config.temporal.namespace, logger });
  onShutdown(() => dev.stop());
  return { address: dev.address, uiUrl: dev.uiUrl };
}

/** The client's and the worker's connections, with the one codec of the process. */
async function connectTemporal({ config, logger, onShutdown, stopSignal }: Context, address: string) {
  const target = { address, namespace: config.temporal.namespace, env: config.env };
  // One codec for the process: the client, the worker and the codec endpoint share it.
  const payloadKeys = await openMerchantPayloadKeys(config).catch((err: Error) => {
    throw new StartupError(err.message);
  });
  onShutdown(() => payloadKeys.close());
  const payloadCodec = payloadKeys.codec;
  const dataConverter = createDataConverter(payloadCodec);
  // A configured Temporal that is not up yet is waited for (logged); a wrong namespace fails at once.
  const { client, connection } = await connectClient(target, {
    dataConverter,
    tracing: processTracing(),
    wait: { logger, signal: stopSignal },
  });
  onShutdown(() => connection.close());
  const nativeConnection = await connectWorker(target, { logger, signal: stopSignal });
  onShutdown(() => nativeConnection.close());
  return { client, connection, nativeConnection, payloadCodec, dataConverter };
}

/** The bank: the embedded sandbox (BANK_BASE_URL unset), or the configured one. */
async function startBank({
  config,
  logger,
  onShutdown,
}: Context): Promise<{ bank: BankEndpoints; sandboxUrl?: string }> {
  if (!config.bank.embedded) return { bank: { authUrl: config.bank.authUrl!, baseUrl: config.bank.baseUrl! } };
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
      // The configured vocabulary (BANK_STATUS_ORDER, BANK_TERMINAL_STATUSES), so the demo bank speaks it too.
      lifecycle: { stepMs: 10_000, statuses: happyPath(config.settings.applications) },
      // Its memory in the data folder beside Temporal's (src/sandbox/persistence.ts): a restart goes on.
      persistence: { file: sandboxStateFile(config.temporal.devServer.dataDir, projectRoot()) },
      logger: logger.child({ component: 'bank-sandbox' }),
    },
    { port: config.bank.sandboxPort, host: '127.0.0.1' },
  );
  onShutdown(() => sandbox.close());
  return { bank: { authUrl: sandbox.url, baseUrl: sandbox.url }, sandboxUrl: sandbox.url };
}

/** npm start makes its own build current (in production the deploy procedure does: docs/deploying.md). */
async function makeThisBuildCurrent(
  { config, logger, stopSignal }: Context,
  client: Client,
  deployment: DeploymentVersion,
): Promise<void> {
  // Not over runs only the bridge release can finish (src/temporal/bridge-release.ts): its message says how.
  const { refusal } = await bridgeGate(client, deployment.buildId, {
    taskQueue: config.temporal.taskQueue,
    deploymentName: deployment.deploymentName,
  });
  if (refusal !== undefined) throw new StartupError(refusal);
  const routing = await makeCurrentVersion(client.workflowService, config.temporal.namespace, deployment, {
    signal: stopSignal,
    routing: 'best-effort',
  });
  if (routing === 'propagating') {
    logger.warn(
      { version: versionString(deployment) },
      'this build is current; Temporal is still routing its task queues to it (a loaded machine) and finishes on its own',
    );
  }
  await warnAboutOtherBuilds(client, config.temporal.namespace, deployment, logger);
}

/** What runs where, and how to try it: printed once everything is up. */
async function startupBanner(
  config: MainConfig,
  client: Client,
  urls: { publicUrl: string; internalUrl: string; uiCodecUrl?: string; uiUrl?: string; sandboxUrl?: string },
  running: { address: string; bank: BankEndpoints; worker: Awaited<ReturnType<typeof startWorker>> },
): Promise<string[]> {
  const { publicUrl, internalUrl, uiCodecUrl, uiUrl, sandboxUrl } = urls;
  const { address, bank, worker } = running;
  const key = config.merchantApiKeys.generated ? config.merchantApiKeys.keys[0]!.key : '<your key>';
  // Each merchant on the development master: its own secret as it signs now (the console shows it too).
  const developmentSecrets = await Promise.all(
    merchantsOnDevelopmentSecret(config).map(async (id) => ({
      id,
      secret: shownSigningSecrets(
        config.merchants.resolve(id).callbacks,
        id,
        await readCallbackSecretGenerations(client, id),
        Date.now(),
      )[0]?.secret,
    })),
  );
  const notice = generatedKeyNotice(config, internalUrl);
  return [
    '',
    'Pay-later integration is running:',
    `  Public listener (bank)    ${publicUrl}   (webhooks /webhooks/*, liveness /healthz)`,
    `  Internal listener         ${internalUrl}   (merchant facade, readiness ${internalUrl}/readyz; /metrics: operator key)`,
    `  API reference             ${internalUrl}/docs`,
    `  Merchant console          ${internalUrl}/console`,
    // The address too: the typed client and `npm run temporal` need it when the dev server's port was moved.
    `  Temporal                  ${address} (namespace ${config.temporal.namespace})`,
    ...(uiUrl
      ? [`  Temporal Web UI           ${uiUrl}${uiCodecUrl ? `   (decodes through ${uiCodecUrl}, loopback only)` : ''}`]
      : []),
    sandboxUrl
      ? `  Bank sandbox              ${sandboxUrl}   (ground truth: ${sandboxUrl}/_sandbox)`
      : `  Bank                      ${bank.baseUrl}`,
    `  Worker metrics, health    http://localhost:${worker.metricsServer.port}/metrics   (/healthz, /readyz)`,
    `  Task queue                ${config.temporal.taskQueue}`,
    ...(worker.deployment
      ? [`  Worker build              ${versionString(worker.deployment)}   (current version)`]
      : []),
    // Embedded stack only (a real bank requires a master): a local merchant verifies with its own, derived from
    // the public development master; printed for each merchant without callbackSigningSecrets of its own.
    ...developmentSecrets.map(
      ({ id, secret }) => `  Callback signing secret   ${secret ?? '(none)'}   (development only; signs for ${id})`,
    ),
    // The keys chosen in the environment by name; a key generated for this run in full (generatedKeyNotice).
    ...(config.merchantApiKeys.generated
      ? []
      : [`  Merchant API keys         ${config.merchantApiKeys.keys.map((k) => k.name).join(', ')}`]),
    ...(config.operatorApiKeys.generated
      ? []
      : [`  Operator API keys         ${config.operatorApiKeys.keys.map((k) => k.name).join(', ')}   (/codec)`]),
    ...(notice ? [notice] : []),
    'Try:',
    `  curl -s -X POST ${internalUrl}/applications -H 'content-type: application/json' \\`,
    `       -H 'authorization: Bearer ${key}' \\`,
    `       -d '{"merchantReference":"order-1001","redirectUrl":"https://shop.example/return"}'`,
    `  curl -s ${internalUrl}/applications/order-1001 -H 'authorization: Bearer ${key}'`,
    'Ctrl-C stops everything.',
    '',
  ];
}

/**
 * `npm start`: the whole stack in one process tree. With nothing configured: the Temporal dev server
 * (Web UI, SQLite state under data/), the bank sandbox, the worker and the Express app. TEMPORAL_ADDRESS
 * and BANK_BASE_URL switch to an existing server and the real bank.
 */
async function startAll(ctx: Context): Promise<void> {
  const { config, logger, onShutdown, shutdown, stopping, stopSignal, runtimeMetricsUrl } = ctx;
  // First: a missing or stale bundle stops start-up before any server is started.
  const { workflowBundle, buildId } = prebuiltWorkflowBundle(logger, { tracing: processTracing() !== undefined });
  const { address, uiUrl } = await temporalAddress(ctx);
  const { client, connection, nativeConnection, payloadCodec, dataConverter } = await connectTemporal(ctx, address);

  // The listeners first: the embedded sandbox needs the public one's address for the account Webhook Endpoint.
  const listeners = await startListeners({
    config,
    client,
    connection,
    logger,
    onShutdown,
    stopSignal,
    payloadCodec,
    // The embedded Web UI's way to /codec, when the dev server runs here (its UI was given this endpoint).
    uiCodecGatewayPort: uiUrl ? uiCodecGatewayPort(config) : undefined,
  });
  const { bank, sandboxUrl } = await startBank(ctx);

  const worker = await startWorker({
    config,
    logger,
    connection: nativeConnection,
    bank,
    dataConverter,
    workflowBundle,
    buildId,
    tracing: processTracing(),
    runtimeMetricsUrl,
    stopSignal,
  });
  // Shutdown order: the listeners drain first (their long-polls and start calls need the worker), then the worker
  // drains, then the sandbox, the connections and the dev server (registered before: steps run in reverse).
  onShutdown(async () => {
    await listeners.stop();
    await worker.stop();
  });
  worker.done.catch(async (err: unknown) => {
    logger.fatal({ err }, 'worker failed');
    await shutdown(1);
  });
  if (worker.deployment) await makeThisBuildCurrent(ctx, client, worker.deployment);

  const lines = await startupBanner(config, client, { ...listeners, uiUrl, sandboxUrl }, { address, bank, worker });
  if (!(await Promise.race([stopping.then(() => true), Promise.resolve(false)]))) {
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

// From here runEntry's graceful shutdown owns SIGINT and SIGTERM (installed synchronously in runEntry).
releaseEarlySignals();
runEntry<MainConfig>('paylater', startAll, {
  // The configuration read before the modules loaded, when it was valid; read (and reported) again otherwise.
  load: (env): MainConfig => early.config ?? loadMainConfig(env),
  runtimeMetrics: temporalMetricsOptions,
});
