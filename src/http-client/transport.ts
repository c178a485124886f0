// Outbound HTTP transport errors: which ones mean the peer could not be reached (worth retrying).
// Generic (no bank vocabulary); used by the bank client (src/activities/bank/transport-errors.ts).

/** Node and undici error codes that mean "the peer could not be reached or stopped answering". */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);

/** The Node or undici error code of a thrown transport error, looking through AggregateError and `cause`. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Happy-eyeballs connects fail with an AggregateError whose members carry the code.
  const inner = (err as { errors?: unknown }).errors;
  if (Array.isArray(inner)) return inner.map(errorCode).find((c) => c !== undefined);
  return errorCode((err as { cause?: unknown }).cause);
}

/** The error's code when it means the peer could not be reached or stopped answering; else undefined. */
export function transientErrorCode(err: unknown): string | undefined {
  const code = errorCode(err);
  return code && TRANSIENT_CODES.has(code) ? code : undefined;
}
