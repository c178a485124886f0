import type { Dispatcher } from 'undici';
import { BankError, BankUnavailableError, type BankOperation } from './errors';

/** Largest response body we read; a bigger one is cut off (the socket is destroyed, never left half-read). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

type ResponseBody = Dispatcher.ResponseData['body'];

/**
 * Reads the whole body as text, up to `maxBytes`. Always leaves the body consumed or destroyed so the
 * pooled connection is released (undici keeps a socket busy until its body is read).
 */
export async function readBodyText(
  body: ResponseBody,
  maxBytes = MAX_RESPONSE_BYTES,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    const remaining = maxBytes - size;
    if (chunk.length > remaining) {
      chunks.push(chunk.subarray(0, remaining));
      // Destroying (not draining) a too-big body: reading megabytes we will not use is worse than a new socket.
      body.destroy();
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
}

/** Discards a body we do not need, without letting a failure to discard it mask the real outcome. */
export async function discardBody(body: ResponseBody): Promise<void> {
  try {
    await body.dump({ limit: 64 * 1024 });
  } catch {
    // The response is already classified; a broken socket here is undici's to clean up.
  }
}

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

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Happy-eyeballs connects fail with an AggregateError whose members carry the code.
  const inner = (err as { errors?: unknown }).errors;
  if (Array.isArray(inner)) return inner.map(errorCode).find((c) => c !== undefined);
  return errorCode((err as { cause?: unknown }).cause);
}

/**
 * Classifies a thrown transport error. The caller's own abort (activity cancellation) is rethrown untouched
 * so Temporal reports a cancellation, not a bank outage; our deadline and network errors become
 * BankUnavailableError; anything else (a bug) is rethrown as is.
 */
export function classifyTransportError(
  operation: BankOperation,
  err: unknown,
  callerSignal: AbortSignal | undefined,
  deadline: AbortSignal,
): unknown {
  if (err instanceof BankError) return err;
  if (callerSignal?.aborted) return callerSignal.reason ?? err;
  if (deadline.aborted) {
    return new BankUnavailableError(operation, 'bank did not answer in time', { code: 'TIMEOUT', cause: err });
  }
  const code = errorCode(err);
  if (code && TRANSIENT_CODES.has(code)) {
    return new BankUnavailableError(operation, `bank unreachable (${code})`, { code, cause: err });
  }
  return err;
}

/** The caller's signal (activity cancellation) combined with our own deadline for one bank call. */
export function withDeadline(
  signal: AbortSignal | undefined,
  timeoutMs: number,
): { signal: AbortSignal; deadline: AbortSignal } {
  const deadline = AbortSignal.timeout(timeoutMs);
  return { signal: signal ? AbortSignal.any([signal, deadline]) : deadline, deadline };
}

/** Resolves with `promise`, or rejects as soon as `signal` aborts, without cancelling the shared promise. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('aborted');
}
