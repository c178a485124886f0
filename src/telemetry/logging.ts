import pino, { type Logger as PinoLogger } from 'pino';
import {
  Runtime,
  type LogLevel,
  type LogMetadata,
  type Logger as TemporalLogger,
  type MetricsExporterConfig,
} from '@temporalio/worker';
import { asyncLocalStorage as activityContext } from '@temporalio/activity';
import { loggableCallbackUrl, loggablePath, loggableUrl, REDACT_PATHS } from '../security/redaction';
import { bankReadsTaskQueue } from '../shared/task-queues';
import { requestLogIds } from './request-context';
import { activeTraceIds } from './trace-ids';

export type Logger = PinoLogger;

/**
 * Secrets never reach a log line: pino redacts known secret fields and credential headers wherever a caller passes
 * them by mistake (src/security/redaction.ts), every `path` field goes through loggablePath (a finance
 * webhook's hash replaced), a `url` field loses its query, and a `callbackUrl` is its origin and a fixed path. Tokens are also kept out of error messages at their source (src/activities/bank);
 * merchant API keys are never logged, only the name of the key that was used.
 */
const SERIALIZERS = {
  err: pino.stdSerializers.err,
  path: (value: unknown) => (typeof value === 'string' ? loggablePath(value) : value),
  url: (value: unknown) => (typeof value === 'string' ? loggableUrl(value) : value),
  callbackUrl: (value: unknown) => (typeof value === 'string' ? loggableCallbackUrl(value) : value),
};

export type LogFormat = 'json' | 'pretty';

/** LOG_FORMAT when set; otherwise pretty for a person at a terminal, JSON for everything else (collectors). */
export function resolveLogFormat(format: LogFormat | undefined, isTTY = process.stdout.isTTY === true): LogFormat {
  return format ?? (isTTY ? 'pretty' : 'json');
}

export function createLogger(
  options: { level?: string; name?: string; format?: LogFormat; destination?: pino.DestinationStream } = {},
): Logger {
  const pretty = !options.destination && resolveLogFormat(options.format) === 'pretty';
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: SERIALIZERS,
      // Inside an HTTP request: its id (X-Request-Id); inside a span (a request, an activity): the line's trace.
      // A line's own `reqId` (the request line's) wins over the mixin's: pino merges the two objects, one key each.
      mixin: () => ({ ...requestLogIds(), ...activeTraceIds() }),
      // pino-pretty in a worker thread, only for a terminal: production stays on synchronous JSON.
      ...(pretty
        ? { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } }
        : {}),
    },
    pretty ? undefined : options.destination,
  );
}

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * An SDK warning that describes this service's design rather than a fault: the bank-reads worker registers
 * activities only (src/worker/factory.ts), so the SDK's "No workflows registered" on that queue is expected at every
 * start, and logged at debug. The same warning for any other queue stays a warning.
 */
export function isExpectedSdkWarning(message: string, meta: LogMetadata | undefined): boolean {
  const taskQueue = (meta as { taskQueue?: unknown } | undefined)?.taskQueue;
  return (
    message.startsWith('No workflows registered') &&
    typeof taskQueue === 'string' &&
    taskQueue.length > BANK_READS_SUFFIX.length &&
    taskQueue.endsWith(BANK_READS_SUFFIX)
  );
}
const BANK_READS_SUFFIX = bankReadsTaskQueue('');

/** The Temporal SDK logger interface over pino: workflow `log` (via sinks), activity `log` and the worker. */
export class PinoTemporalLogger implements TemporalLogger {
  constructor(private readonly logger: Logger) {}

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    const at = level === 'WARN' && isExpectedSdkWarning(message, meta) ? 'debug' : LEVELS[level];
    // SDK metadata carries workflowId, runId, activityType… as plain fields: they land on the JSON line.
    this.logger[at]({ ...(meta as Record<string, unknown>) }, message);
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

/**
 * The bank client's logger (src/activities/bank/logger.ts: Temporal's `(message, meta)` shape, not pino's
 * `(obj, message)`). Inside an activity it logs through the activity's logger, so the line carries the workflow
 * and activity ids, the bank's ids the activity was given (src/activities/log-attributes.ts) and the trace ids;
 * elsewhere (token refreshes shared by many activities still run inside the one that started them) through
 * `logger`, meta as fields.
 */
export function bankClientLogger(logger: Logger): Pick<TemporalLogger, 'debug' | 'info' | 'warn' | 'error'> {
  const fallback = new PinoTemporalLogger(logger);
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, meta?: LogMetadata): void => {
      const activity = activityContext.getStore();
      if (activity) activity.log[level](message, { component: 'bank-client', ...meta });
      else fallback[level](message, meta);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
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
      // The worker's Prometheus exporter (src/worker/metrics.ts); installed here since the Runtime is installed once.
      ...(options.metrics ? { metrics: options.metrics } : {}),
    },
  });
}
