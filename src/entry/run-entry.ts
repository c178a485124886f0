import type { MetricsExporterConfig } from '@temporalio/worker';
import { ConfigError, type Config } from '../config';
import { envFileResult } from './load-env-file';
import { createLogger, installTemporalLogging, type Logger } from '../telemetry/logging';
import { DEVELOPMENT_PAYLOAD_KEY_ID } from '../security/payload-codec';
import { processTracing } from './tracing-preload';
import { configuredPorts, freeLoopbackPort } from '../temporal/free-port';
import { watchParent } from './parent-watch';

/** Raised for start-up problems whose message says what to do; printed without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/** What the frame itself reads of a process's configuration (every process's has it). */
export type EntryConfig = Pick<Config, 'logLevel' | 'logFormat' | 'tracing' | 'temporal' | 'payloadEncryption'>;

export interface EntryContext<C extends EntryConfig = Config> {
  config: C;
  logger: Logger;
  /** Registers a step of the graceful shutdown; steps run in reverse order of registration. */
  onShutdown: (step: () => Promise<void> | void) => void;
  /** Resolves when a shutdown was requested (SIGINT/SIGTERM). */
  stopping: Promise<void>;
  /** The same, as a signal: aborts waits (for Temporal, for example) when a shutdown is requested. */
  stopSignal: AbortSignal;
  /** Ends the process through the same graceful path (for example when the worker fails). */
  shutdown: (exitCode: number) => Promise<void>;
  /**
   * The Temporal Runtime's Prometheus exporter (`http://127.0.0.1:<free port>/metrics`), in processes that run a
   * worker; served through WORKER_METRICS_PORT by startWorker (src/worker/metrics.ts).
   */
  runtimeMetricsUrl?: string;
}

const EXPECTED = new Set(['ConfigError', 'StartupError', 'TemporalUnreachableError', 'TemporalNamespaceError']);

/**
 * The common frame of every entry point (main, worker, api): configuration that fails fast with a message
 * naming each variable, logging through pino with the Temporal runtime routed into it, and a graceful
 * shutdown on SIGINT/SIGTERM (a second signal forces the exit).
 */
export function runEntry<C extends EntryConfig>(
  name: string,
  start: (ctx: EntryContext<C>) => Promise<void>,
  options: {
    /** The process's configuration module (src/config/main.ts, api.ts, worker.ts). */
    load: (env: Record<string, string | undefined>) => C;
    /**
     * A process that runs a worker exports the SDK's metrics (src/worker/metrics.ts temporalMetricsOptions): the
     * Runtime is installed once, before any connection, with its exporter on a free loopback port.
     */
    runtimeMetrics?: (bindAddress: string) => MetricsExporterConfig;
    /**
     * False for a process with no worker and no native connection (the API: its client is the SDK's pure-JavaScript
     * one): no Temporal Runtime is installed, whose threads and log forwarding cost an idle API about 2.5 ms of CPU a
     * second (docs/benchmarks.md, "The receiver's CPU per webhook, priced"). Default true.
     */
    temporalRuntime?: boolean;
  },
): void {
  let config: C;
  try {
    config = options.load(process.env);
  } catch (err) {
    process.stderr.write(`${name}: ${(err as Error).message}\n`);
    process.exit(err instanceof ConfigError ? 78 : 1); // 78: EX_CONFIG
  }
  const logger = createLogger({ level: config.logLevel, name, format: config.logFormat });
  logStartupSettings(config, logger);

  const steps: (() => Promise<void> | void)[] = [];
  const tracing = processTracing();
  if (tracing && config.tracing) {
    // Registered first, so it runs last: the spans of the shutdown itself are flushed too.
    steps.push(() => tracing.shutdown());
    logger.info(
      { endpoint: config.tracing.url, protocol: config.tracing.protocol, serviceName: config.tracing.serviceName },
      'tracing on: spans exported over OTLP',
    );
  }
  let stopping = false;
  let resolveStopping!: () => void;
  const stoppingPromise = new Promise<void>((r) => (resolveStopping = r));
  const stopController = new AbortController();
  void stoppingPromise.then(() => stopController.abort(new Error('shutting down')));

  const shutdown = async (exitCode: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    resolveStopping();
    logger.info('shutting down');
    for (const step of steps.reverse()) {
      try {
        await step();
      } catch (err) {
        logger.error({ err }, 'shutdown step failed');
      }
    }
    logger.info('stopped');
    process.exit(exitCode);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        logger.warn(`second ${signal}: exiting now`);
        process.exit(130);
      }
      void shutdown(0);
    });
  }

  // A promise rejected with no handler, or a throw no one catches, is a defect, logged where operators read logs (not
  // Node's raw stderr) and ended through the graceful path with exit code 1. While a shutdown is under way, one is
  // what a failed shutdown step is: logged, and the exit code stays the one asked for (the work was drained).
  const unexpected = (kind: string) => (err: unknown) => {
    if (stopping) {
      logger.error({ err }, `${kind} while shutting down`);
      return;
    }
    logger.fatal({ err }, kind);
    void shutdown(1);
  };
  process.on('unhandledRejection', unexpected('unhandled promise rejection'));
  process.on('uncaughtException', unexpected('uncaught exception'));

  watchNpmParent(logger, () => void shutdown(0));

  // The worker's own listener serves the Runtime's exporter on WORKER_METRICS_PORT.
  const { runtimeMetrics } = options;
  if (!runtimeMetrics && options.temporalRuntime !== false) installTemporalLogging(logger);
  const runtimeReady: Promise<string | undefined> = runtimeMetrics
    ? // Not a port the process is about to listen on itself (one configured in the 20000-32767 range it picks from).
      freeLoopbackPort(configuredPorts(process.env)).then((port) => {
        installTemporalLogging(logger, { metrics: runtimeMetrics(`127.0.0.1:${port}`) });
        return `http://127.0.0.1:${port}/metrics`;
      })
    : Promise.resolve(undefined);
  runtimeReady
    .then((runtimeMetricsUrl) =>
      start({
        config,
        logger,
        onShutdown: (step) => void steps.push(step),
        stopping: stoppingPromise,
        stopSignal: stopController.signal,
        shutdown,
        runtimeMetricsUrl,
      }),
    )
    .catch(async (err: unknown) => {
      const e = err as Error;
      if (stopping) return; // a wait cut short by the shutdown already under way
      if (EXPECTED.has(e?.name)) process.stderr.write(`${name}: ${e.message}\n`);
      else logger.fatal({ err }, 'start-up failed');
      await shutdown(1);
    });
}

/** What start-up tells operators first: the .env file read, where Temporal is, a development payload key. */
function logStartupSettings(config: EntryConfig, logger: Logger): void {
  const envFile = envFileResult();
  // Names only: a .env holds secrets.
  if (envFile.path)
    logger.info(
      { envFile: envFile.path, applied: envFile.applied, keptFromEnvironment: envFile.overridden },
      'read .env (variables already in the environment win)',
    );
  logger.info(
    {
      temporal: {
        address: config.temporal.address ?? 'embedded dev server',
        addressFrom: config.temporal.connection.addressFrom,
        namespace: config.temporal.namespace,
        tls: config.temporal.connection.tls,
        // Whether an API key is configured, never the key (a field named apiKey would be redacted anyway).
        auth: config.temporal.connection.apiKey ? 'api-key' : 'none',
      },
    },
    'Temporal connection settings',
  );
  if (config.payloadEncryption.developmentKey) {
    logger.warn(
      { keyId: DEVELOPMENT_PAYLOAD_KEY_ID },
      'PAYLOAD_ENCRYPTION_KEYS is unset: Temporal payloads are encrypted with the built-in development key, ' +
        'which is public. Set PAYLOAD_ENCRYPTION_KEYS (keyId:<base64 of 32 bytes>) before handling real customer data.',
    );
  }
}

/**
 * Started by an npm script (`npm start`, `npm run worker`…; npm sets npm_lifecycle_event): the process stops when
 * npm is gone. The scripts `exec` node, so npm 11 forwards SIGINT and SIGTERM to this process itself; an npm that dies
 * without forwarding (SIGKILL, or a version that does not forward) leaves this process reparented, which this
 * notices within half a second (./parent-watch.ts), so nothing keeps running on its ports.
 */
function watchNpmParent(logger: Logger, stop: () => void): void {
  if (!process.env.npm_lifecycle_event) return;
  watchParent((parentPid) => {
    logger.info({ parentPid }, 'npm, which started this process, is gone: shutting down');
    stop();
  });
}
