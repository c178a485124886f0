/**
 * The merchant's typed client over the Temporal client: start and follow finance applications and consent
 * refreshes. The REST facade (src/api/routes) is a thin layer over these same functions.
 */
export * from './client/consent-refresh';
export * from './client/finance-applications';
