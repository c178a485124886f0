/**
 * The API process's factories beside createPublicApp / createInternalApp (./app.ts): the apps' dependencies from
 * configuration, both listeners started with their shutdown, the codec endpoint's authentication, and the notice of
 * a generated key. Used by the entry points (src/api/server.ts, src/main.ts) and the tests.
 */
import type { Server } from 'node:http';
import type { Client, Connection } from '@temporalio/client';
import type { ApiConfig as Config } from '../config/api';
import type { Logger } from '../telemetry/logging';
import { checkTemporal } from '../temporal/connection';
import type { PayloadCodec } from '@temporalio/common';
import type { RequestHandler } from 'express';
import { createInternalApp, createPublicApp, type AppDeps, type InternalAppOptions } from './app';
import { authenticateOperator } from './authenticate';
import { codecRoutes } from './resources/codec/routes';
import { uiCodecGatewayApp } from './ui-codec-gateway';
import { boundPort, listen } from './http-server';
import { ApiDrain, drainListeners } from './drain';
import { createMetrics } from './metrics';
import { consentAssignmentWarning } from './consent-assignment';
import { FailedAuthentications } from './auth-failures';
import type { AuditLog } from '../audit/audit-log';
import { openAuditLogWriter } from '../audit/open';
import { AUDIT_LOG, describeAuditLogSetting } from '../audit/setting';
import { StartupError } from '../entry/run-entry';

/** The apps' dependencies wired from configuration: used by `npm run api` and by `npm start`. */
export function appDepsFromConfig(deps: {
  config: Config;
  client: Client;
  connection: Connection;
  logger: Logger;
  audit?: AuditLog;
}) {
  const { config } = deps;
  const metrics = createMetrics();
  return {
    client: deps.client,
    audit: deps.audit,
    taskQueue: config.temporal.taskQueue,
    webhooks: {
      hashSecret: config.webhooks.hashSecret,
      previousHashSecret: config.webhooks.previousHashSecret,
      securityHeader: config.webhooks.securityHeader,
    },
    merchantApiKeys: config.merchantApiKeys.keys,
    operatorApiKeys: config.operatorApiKeys.keys,
    consentAssignment: config.consentAssignment.rule,
    settings: config.settings,
    merchants: config.merchants,
    consoleSessionsPerMerchant: config.console.sessionsPerMerchant,
    logger: deps.logger,
    metrics,
    // One count of wrong keys per client address for the API, /codec and the console's sign-in.
    authFailures: new FailedAuthentications({
      metrics,
      logger: deps.logger,
      attempts: config.failedAuthentications.per15Minutes,
    }),
    checkTemporal: () => checkTemporal(deps.connection, config.temporal.namespace),
  } satisfies AppDeps;
}

export interface RunningListeners {
  /** The public listener (PORT): the bank's webhooks, /healthz and /readyz. */
  publicUrl: string;
  /** The internal listener (INTERNAL_PORT): merchant facade, /readyz, /metrics. */
  internalUrl: string;
  /** The embedded Web UI's codec endpoint (TEMPORAL_UI_CODEC_PORT, on 127.0.0.1), when startListeners runs one. */
  uiCodecUrl?: string;
  /** The drain's state (src/api/drain.ts). */
  drain: ApiDrain;
  /**
   * Drains both listeners (SHUTDOWN_DRAIN_DELAY, then SHUTDOWN_GRACE_PERIOD) and resolves once both are closed. Also
   * registered with `onShutdown`; calling it again returns the same drain.
   */
  stop(): Promise<void>;
}

/**
 * Both listeners, from configuration, drained on shutdown: the public app on PORT and the internal app on
 * INTERNAL_PORT (with `options.extraRouters`, e.g. the codec endpoint). Used by `npm run api` and `npm start`.
 * `/readyz` turns 503 on both as soon as `stopSignal` is aborted, whenever the drain step itself runs.
 */
export async function startListeners(
  ctx: {
    config: Config;
    client: Client;
    connection: Connection;
    logger: Logger;
    onShutdown: (step: () => Promise<void> | void) => void;
    /** EntryContext.stopSignal: aborted on SIGTERM/SIGINT. */
    stopSignal?: AbortSignal;
    /** The process's payload codec: served at /codec on the internal listener for the Web UI and the CLI. */
    payloadCodec: PayloadCodec;
    /** The embedded Web UI's codec gateway's port (npm start with its dev server, ./ui-codec-gateway.ts); none when unset. */
    uiCodecGatewayPort?: number;
    /** The audit trail; absent: the one AUDIT_LOG names, opened here (a store that cannot be opened stops start-up). */
    audit?: AuditLog;
  },
  options: InternalAppOptions = {},
): Promise<RunningListeners> {
  const drain = new ApiDrain();
  const audit = ctx.audit ?? (await openAuditTrail(ctx.config, ctx.logger));
  // Registered before the listeners' drain, so it closes after them (steps run in reverse): no request left to record.
  if (!ctx.audit) ctx.onShutdown(() => audit.close());
  const deps = { ...appDepsFromConfig({ ...ctx, audit }), drain } satisfies AppDeps;
  const consentWarning = consentAssignmentWarning(ctx.config);
  if (consentWarning) ctx.logger.warn({ merchants: ctx.config.merchants.ids() }, consentWarning);
  const codec = codecRoutes({
    codec: ctx.payloadCodec,
    authenticate: codecAuthentication(ctx.config, deps),
    corsOrigins: ctx.config.codec.corsOrigins,
    audit,
    logger: ctx.logger,
  });
  const extra = typeof options.extraRouters === 'function' ? options.extraRouters(deps) : (options.extraRouters ?? []);
  options = { ...options, extraRouters: [codec, ...extra] };
  const servers: Server[] = [];
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= drainListeners(
      drain,
      servers,
      { delayMs: ctx.config.shutdown.drainDelayMs, graceMs: ctx.config.shutdown.gracePeriodMs },
      ctx.logger,
    ));
  ctx.onShutdown(stop);
  if (ctx.stopSignal?.aborted) drain.advance('draining');
  else ctx.stopSignal?.addEventListener('abort', () => drain.advance('draining'), { once: true });
  // The apps themselves are passed too (listen: their requests are created with Express's prototypes).
  const publicApp = createPublicApp(deps);
  servers.push(await listen(drain.track(publicApp), ctx.config.port, undefined, 'PORT', publicApp));
  const internalApp = createInternalApp(deps, options);
  servers.push(
    // Loopback on the embedded stack unless INTERNAL_HOST says otherwise; the public listener on every interface.
    await listen(
      drain.track(internalApp),
      ctx.config.internalPort,
      ctx.config.internalHost,
      'INTERNAL_PORT',
      internalApp,
    ),
  );
  const [publicServer, internalServer] = servers as [Server, Server];
  let uiCodecUrl: string | undefined;
  if (ctx.uiCodecGatewayPort !== undefined) {
    const gateway = uiCodecGatewayApp({
      codec: ctx.payloadCodec,
      corsOrigins: ctx.config.codec.corsOrigins,
      metrics: deps.metrics,
      logger: ctx.logger,
      audit,
    });
    const port = ctx.uiCodecGatewayPort;
    const server = await listen(drain.track(gateway), port, '127.0.0.1', 'TEMPORAL_UI_CODEC_PORT', gateway);
    servers.push(server);
    uiCodecUrl = `http://localhost:${boundPort(server)}/codec`;
  }
  return {
    uiCodecUrl,
    publicUrl: `http://localhost:${boundPort(publicServer)}`,
    internalUrl: `http://${reachableHost(ctx.config.internalHost)}:${boundPort(internalServer)}`,
    drain,
    stop,
  };
}

/** The store AUDIT_LOG names, opened to append; a StartupError naming AUDIT_LOG when it cannot be. */
async function openAuditTrail(config: Config, logger: Logger): Promise<AuditLog> {
  const where = describeAuditLogSetting(config.audit);
  let audit: AuditLog;
  try {
    audit = await openAuditLogWriter(config.audit);
  } catch (err) {
    throw new StartupError(`${AUDIT_LOG} (${where}) cannot be opened: ${(err as Error).message}`);
  }
  logger.info({ audit: audit.location }, 'audit trail open');
  if (config.audit.kind === 'file' && !config.bank.embedded)
    logger.warn(
      { audit: audit.location },
      `${AUDIT_LOG} is a file: one API process may write it; run several with ${AUDIT_LOG}=postgres://… (docs/security.md#audit-trail)`,
    );
  return audit;
}

/** The host of a listener's URL: `localhost` when it binds loopback or every interface, else its address. */
function reachableHost(host: string): string {
  if (['127.0.0.1', '::1', '0.0.0.0', '::'].includes(host)) return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Who may decode at /codec: an operator API key (`Authorization: Bearer`, as `temporal --codec-auth` sends it),
 * whatever the `Origin` (any client can send the Web UI's); a merchant's key answers 403 (authenticateOperator). The
 * Temporal Web UI sends no key of its own: compose's reaches /codec through a gateway that adds one, `npm start`'s
 * through ./ui-codec-gateway.ts on 127.0.0.1 (docs/security.md).
 */
export function codecAuthentication(_config: Config, deps: AppDeps): RequestHandler {
  return authenticateOperator(deps);
}

/**
 * The lines that show the development API keys generated for this run (MERCHANT_API_KEYS or OPERATOR_API_KEYS
 * unset on the embedded stack), written to the terminal once at start-up, never through the logger. Undefined
 * when both are configured.
 */
export function generatedKeyNotice(
  config: Config,
  /** The internal listener as bound (INTERNAL_PORT may be 0). */
  internalUrl = `http://localhost:${config.internalPort}`,
): string | undefined {
  const lines: string[] = [];
  if (config.merchantApiKeys.generated) {
    const { name, key } = config.merchantApiKeys.keys[0]!;
    lines.push(
      config.developmentKeysFile
        ? `  Merchant API key (development, kept in ${config.developmentKeysFile}; set MERCHANT_API_KEYS to choose keys):`
        : `  Merchant API key (development, generated for this run; set MERCHANT_API_KEYS to choose keys):`,
      `    ${name}:${key}`,
      `    send it as: Authorization: Bearer ${key}`,
    );
  }
  if (config.operatorApiKeys.generated) {
    const { name, key } = config.operatorApiKeys.keys[0]!;
    lines.push(
      config.developmentKeysFile
        ? `  Operator API key (development, kept in ${config.developmentKeysFile}; set OPERATOR_API_KEYS to choose keys):`
        : `  Operator API key (development, generated for this run; set OPERATOR_API_KEYS to choose keys):`,
      `    ${name}:${key}`,
      config.developmentKeysFile
        ? `    the Temporal CLI with it (and the codec): npm run temporal -- workflow show -w <id>`
        : `    decode with it: temporal workflow show -w <id> --codec-endpoint ${internalUrl}/codec --codec-auth 'Bearer ${key}'`,
    );
  }
  return lines.length === 0 ? undefined : lines.join('\n');
}
