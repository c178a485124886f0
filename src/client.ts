/**
 * The merchant's typed client over the Temporal client: start and follow finance applications and consent
 * refreshes. The REST facade (src/api/resources) is a thin layer over these same functions.
 *
 * Also the package `@paylater-temporal/client` (packages/client: built from these sources, declarations included,
 * `@temporalio/client` a peer). Everything it exports is reached from here: keep what it pulls in to src/client,
 * src/shared, the payload codec (src/security/payload-codec.ts) and the data converter
 * (src/temporal/data-converter.ts), and workflows as `import type` only (test/client/package.test.ts checks the
 * package).
 */
export * from './client/consent-refresh';
export * from './client/finance-applications';
export * from './client/consent-claims';
export * from './client/connect';
export {
  DEVELOPMENT_PAYLOAD_KEY_ID,
  ENCRYPTED_ENCODING,
  PayloadEncryptionError,
  parsePayloadEncryptionKeys,
  type PayloadEncryptionKey,
} from './security/payload-codec';
