import type { Logger, LogLevel, LogMetadata } from '@temporalio/common';
import pino from 'pino';

/**
 * A pino logger writing into memory, behind Temporal's Logger interface: what MockActivityEnvironment and
 * the bank client log ends up in `text()` exactly as pino would have written it.
 */
export function captureLogs(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const sink = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
  const write = (level: LogLevel, message: string, meta?: LogMetadata): void => {
    const method = level.toLowerCase() as 'trace' | 'debug' | 'info' | 'warn' | 'error';
    sink[method](meta ?? {}, message);
  };
  const logger: Logger = {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
  return { logger, text: () => lines.join('') };
}
