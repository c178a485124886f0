import { join, relative } from 'node:path';
import { loadTracingConfig } from '../config';
import { startTracing, type Tracing } from '../telemetry/tracing';

/**
 * Imported first by every entry point (src/main.ts, src/worker.ts, src/api/server.ts): the instrumentations hook
 * `require`, so they must be registered before express and http are loaded by the entry's other imports. The one
 * process-wide state of this project, because OpenTelemetry's provider is process-wide itself.
 * With tracing off no provider or instrumentation is registered. Invalid OTEL_* variables leave tracing off here; loadConfig then
 * stops start-up naming them.
 */
let tracing: Tracing | undefined;
let started = false;

/** The process's tracing, started at the first call (the import of this module); undefined when off. */
export function processTracing(): Tracing | undefined {
  if (!started) {
    started = true;
    const config = loadTracingConfig(process.env);
    if (config) {
      // The entry's path under dist/ (or src/): worker, api/server, main…
      const entry = require.main
        ? relative(join(__dirname, '..'), require.main.filename)
            .replace(/\\/g, '/')
            .replace(/\.[jt]s$/, '')
        : '';
      const serviceName = entry === 'worker' ? 'paylater-worker' : entry === 'api/server' ? 'paylater-api' : 'paylater';
      tracing = startTracing({ config, serviceName });
    }
  }
  return tracing;
}

processTracing();
