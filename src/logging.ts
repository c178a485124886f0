import pino, { type Logger as PinoLogger } from 'pino';
import { Runtime, type LogLevel, type LogMetadata, type Logger as TemporalLogger } from '@temporalio/worker';

export type Logger = PinoLogger;

/**
 * Secrets never reach a log line: pino redacts these paths wherever a caller passes them by mistake.
 * Tokens are also kept out of error messages at their source (src/activities/bank).
 */
const REDACT = [
  'token',
  'accessToken',
  'access_token',
  'clientSecret',
  'client_secret',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  '*.token',
  '*.accessToken',
  '*.clientSecret',
  '*.authorization',
];

export function createLogger(
  options: { level?: string; name?: string; destination?: pino.DestinationStream } = {},
): Logger {
  return pino(
    { level: options.level ?? 'info', name: options.name, redact: { paths: REDACT, censor: '[redacted]' } },
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
export function installTemporalLogging(logger: Logger): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    logger: new PinoTemporalLogger(logger.child({ component: 'temporal' })),
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  });
}
