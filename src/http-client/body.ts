import type { Dispatcher } from 'undici';

// Outbound HTTP (undici) response bodies: read within a bound, or discarded, never left half-read.
// Generic: used by the bank client and the merchant callbacks.

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

/** JSON.parse that answers undefined for text that is not JSON (an error body may be anything). */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
