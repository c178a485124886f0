// First: .env (src/load-env-file.ts), then tracing, whose instrumentations must be registered before http and express
// are loaded.
import '../load-env-file';
import { processTracing } from '../telemetry/preload';
import type { Client, Connection } from '@temporalio/client';
import { runEntry, StartupError } from '../bootstrap';
import type { Config } from '../config';
import type { Logger } from '../logging';
import { checkTemporal, openClient } from '../temporal/connection';
import type { PayloadCodec } from '@temporalio/common';
import type { RequestHandler } from 'express';
import { createInternalApp, createPublicApp, type AppDeps, type InternalAppOptions } from './app';
import { authenticate } from './authenticate';
import { codecRoutes } from './routes/codec';
import { createPayloadCodec } from '../security/payload-codec';
import { createDataConverter } from '../temporal/data-converter';
import { boundPort, closeServer, listen } from './http-server';
import { createMetrics } from './metrics';

/** The apps' dependencies wired from configuration: used by `npm run api` and by `npm start`. */
export function appDepsFromConfig(deps: { config: Config; client: Client; connection: Connection; logger: Logger }) {
  const { config } = deps;
  return {
    client: deps.client,
    taskQueue: config.temporal.taskQueue,
    webhooks: config.webhooks,
    merchantApiKeys: config.merchantApiKeys.keys,
    settings: config.settings,
    transactionsCallbackUrl: config.transactionsCallbackUrl,
    callbackAllowList: config.callbacks.allowList,
    logger: deps.logger,
    metrics: createMetrics(),
    checkTemporal: () => checkTemporal(deps.connection, config.temporal.namespace),
  } satisfies AppDeps;
}

export interface RunningListeners {
  /** The public listener (PORT): the bank's webhooks and /healthz. */
  publicUrl: string;
  /** The internal listener (INTERNAL_PORT): merchant facade, /readyz, /metrics. */
  internalUrl: string;
}

/**
 * Both listeners, from configuration, each closed on shutdown: the public app on PORT and the internal app on
 * INTERNAL_PORT (with `options.extraRouters`, e.g. the codec endpoint). Used by `npm run api` and `npm start`.
 */
export async function startListeners(
  ctx: {
    config: Config;
    client: Client;
    connection: Connection;
    logger: Logger;
    onShutdown: (step: () => Promise<void> | void) => void;
    /** The process's payload codec: served at /codec on the internal listener for the Web UI and the CLI. */
    payloadCodec: PayloadCodec;
  },
  options: InternalAppOptions = {},
): Promise<RunningListeners> {
  const deps = appDepsFromConfig(ctx);
  const codec = codecRoutes({
    codec: ctx.payloadCodec,
    authenticate: codecAuthentication(ctx.config, deps),
    corsOrigins: ctx.config.codec.corsOrigins,
  });
  const extra = typeof options.extraRouters === 'function' ? options.extraRouters(deps) : (options.extraRouters ?? []);
  options = { ...options, extraRouters: [codec, ...extra] };
  const publicServer = await listen(createPublicApp(deps), ctx.config.port, undefined, 'PORT');
  ctx.onShutdown(() => closeServer(publicServer));
  const internalServer = await listen(
    createInternalApp(deps, options),
    ctx.config.internalPort,
    undefined,
    'INTERNAL_PORT',
  );
  ctx.onShutdown(() => closeServer(internalServer));
  return {
    publicUrl: `http://localhost:${boundPort(publicServer)}`,
    internalUrl: `http://localhost:${boundPort(internalServer)}`,
  };
}

/**
 * Who may decode at /codec: a merchant or operator API key (`Authorization: Bearer`, as `temporal --codec-auth`
 * sends it). The Temporal Web UI sends no Authorization header of its own (only its users' SSO token when run
 * with TEMPORAL_CODEC_PASS_ACCESS_TOKEN), so on the embedded stack with the public development payload key, and
 * only there, a browser on an allowed UI origin is let through: that key protects nothing anyway. With real keys,
 * a UI reaches /codec through a proxy that authenticates its users and adds the bearer key (README "Security").
 */
export function codecAuthentication(config: Config, deps: AppDeps): RequestHandler {
  const keyed = authenticate(deps);
  if (!(config.bank.embedded && config.payloadEncryption.developmentKey)) return keyed;
  const uiOrigins = new Set(config.codec.corsOrigins);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (req.headers.authorization === undefined && origin !== undefined && uiOrigins.has(origin)) return next();
    keyed(req, res, next);
  };
}

/**
 * The line that shows a development API key generated for this run (MERCHANT_API_KEYS unset on the embedded
 * stack), written to the terminal once at start-up, never through the logger. Undefined when keys are configured.
 */
export function generatedKeyNotice(config: Config): string | undefined {
  if (!config.merchantApiKeys.generated) return undefined;
  const { name, key } = config.merchantApiKeys.keys[0]!;
  return (
    `  Merchant API key (development, generated for this run; set MERCHANT_API_KEYS to choose keys):\n` +
    `    ${name}:${key}\n` +
    `    send it as: Authorization: Bearer ${key}`
  );
}

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
      const payloadCodec = createPayloadCodec(config.payloadEncryption.keys);
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
      const { publicUrl, internalUrl } = await startListeners({
        config,
        client,
        connection,
        logger,
        onShutdown,
        payloadCodec,
      });
      logger.info(
        { publicUrl, internalUrl, merchantKeys: config.merchantApiKeys.keys.map((k) => k.name) },
        `API listening: public (bank webhooks) ${publicUrl}, internal (merchant facade, /readyz, /metrics) ${internalUrl}`,
      );
      const notice = generatedKeyNotice(config);
      if (notice) process.stdout.write(`${notice}\n`);
    },
    { role: 'api' },
  );
}
