/**
 * The merchant's typed client over the Temporal client: start and follow finance applications and consent
 * refreshes. The REST facade (src/api/routes) is a thin layer over these same functions.
 *
 * Also the package `@paylater-temporal/client` (packages/client: built from these sources, declarations included,
 * `@temporalio/client` a peer). Everything it exports is reached from here: keep this file's imports to
 * src/client and src/shared, and workflows as `import type` only (test/client/package.test.ts checks the package).
 */
export * from './client/consent-refresh';
export * from './client/finance-applications';
export * from './client/consent-claims';
