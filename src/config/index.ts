/**
 * The configuration (docs/configuration.md): one schema of every variable (schema.ts), resolved in one place
 * (resolve.ts, settings.ts), loaded by each process through its own module (main.ts, api.ts, worker.ts).
 */
export * from './schema';
export * from './settings';
export * from './resolve';
export * from './main';
export * from './api';
export * from './worker';
