import pino, { type Logger as PinoLogger } from 'pino';
import {
  Runtime,
  type LogLevel,
  type LogMetadata,
  type Logger as TemporalLogger,
  type MetricsExporterConfig,
} from '@temporalio/worker';
import { loggablePath, REDACT_PATHS } from './security/redaction';

export type Logger = PinoLogger;

/**
 * Secrets never reach a log line: pino redacts known secret fields and credential headers wherever a caller passes
 * them by mistake (src/security/redaction.ts), and every `path` field goes through loggablePath (a finance
 * webhook's hash replaced). Tokens are also kept out of error messages at their source (src/activities/bank);
 * merchant API keys are never logged, only the name of the key that was used.
 */
const SERIALIZERS = {
  err: pino.stdSerializers.err,
  path: (value: unknown) => (typeof value === 'string' ? loggablePath(value) : value),
};

export function createLogger(
  options: { level?: string; name?: string; destination?: pino.DestinationStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: SERIALIZERS,
    },
    options.destination,
  );
}

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** The Temporal SDK logger interface over pino: workflow `log` (via sinks), activity `log` and the worker. */
export class PinoTemporalLogger implements TemporalLogger {
  constructor(private readonly logger: Logger) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    // SDK metadata carries workflowId, runId, activityType… as plain fields: they land on the JSON line.
    this.logger[LEVELS[level]]({ ...(meta as Record<string, unknown>) }, message);
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

let installed = false;

/**
 * Routes the Temporal runtime's logs (SDK and, forwarded, the Rust core's) into pino. Runtime.install may
 * run once per process and before any connection or worker, so entry points call this first.
 */
export function installTemporalLogging(logger: Logger, options: { metrics?: MetricsExporterConfig } = {}): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    logger: new PinoTemporalLogger(logger.child({ component: 'temporal' })),
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      // The worker's Prometheus exporter (src/worker-metrics.ts); installed here since the Runtime is installed once.
      ...(options.metrics ? { metrics: options.metrics } : {}),
    },
  });
}
