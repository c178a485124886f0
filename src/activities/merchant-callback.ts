import { ApplicationFailure } from '@temporalio/common';
import { Agent, request, type Dispatcher } from 'undici';
import { CALLBACK_REJECTED } from '../shared/failure-types';
import { parseRetryAfter } from './bank/errors';
import { readBodyText, withDeadline } from './bank/http';
import { MAX_RATE_LIMIT_DELAY_MS } from './failures';

/** A merchant callback that may work later (5xx, 408, 429, network, timeout); retried by the retry policy. */
export const CALLBACK_UNAVAILABLE = 'MerchantCallbackUnavailable';

/** Below MERCHANT_CALLBACK_ACTIVITY_OPTIONS.startToCloseTimeout (15 s) so the activity reports the real cause. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 10_000;

/**
 * The dispatcher for merchant callbacks: an Agent (one pool per merchant origin) with timeouts under the
 * activity's. The caller owns and closes it.
 */
export function createCallbackDispatcher(options: { connections?: number; timeoutMs?: number } = {}): Agent {
  const timeout = options.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS;
  return new Agent({
    connections: options.connections ?? 8,
    connectTimeout: Math.min(5_000, timeout),
    headersTimeout: timeout,
    bodyTimeout: timeout,
  });
}

export interface MerchantCallback {
  url: string;
  idempotencyKey: string;
  event: Record<string, unknown>;
}

/**
 * POSTs one event as JSON. 2xx: delivered. 4xx (except 408/429) and redirects: non-retryable
 * MerchantCallbackRejected, the merchant refused it. Everything else: retryable.
 */
export async function postMerchantCallback(
  callback: MerchantCallback,
  options: { dispatcher?: Dispatcher; timeoutMs?: number; signal?: AbortSignal },
): Promise<{ delivered: boolean; status: number }> {
  let url: URL;
  try {
    url = new URL(callback.url);
  } catch {
    throw ApplicationFailure.nonRetryable('merchant callback URL is not a URL', CALLBACK_REJECTED);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw ApplicationFailure.nonRetryable(
      `merchant callback URL scheme ${url.protocol} is not http(s)`,
      CALLBACK_REJECTED,
    );
  }

  const { signal, deadline } = withDeadline(options.signal, options.timeoutMs ?? DEFAULT_CALLBACK_TIMEOUT_MS);
  let status: number;
  let retryAfter: string | string[] | undefined;
  try {
    const res = await request(url, {
      method: 'POST',
      // Without an injected dispatcher undici's global one is used (no timeouts of ours but the deadline).
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      signal,
      headers: { 'content-type': 'application/json', 'idempotency-key': callback.idempotencyKey },
      body: JSON.stringify(callback.event),
    });
    status = res.statusCode;
    retryAfter = res.headers['retry-after'];
    // Read (and drop) the answer so the socket goes back to the pool; only a little of it is kept.
    await readBodyText(res.body, 4096);
  } catch (err) {
    // Activity cancellation stays a cancellation; any other transport failure may clear up later.
    if (options.signal?.aborted) throw options.signal.reason ?? err;
    throw ApplicationFailure.create({
      type: CALLBACK_UNAVAILABLE,
      message: `merchant callback failed: ${describeCause(err, deadline)}`,
      cause: err instanceof Error ? err : undefined,
    });
  }

  if (status >= 200 && status <= 299) return { delivered: true, status };
  if (status === 408 || status === 429 || status >= 500) {
    throw ApplicationFailure.create({
      type: CALLBACK_UNAVAILABLE,
      message: `merchant callback answered HTTP ${status}`,
      details: [{ status }],
      nextRetryDelay: status === 429 ? capped(parseRetryAfter(retryAfter, Date.now())) : undefined,
    });
  }
  throw ApplicationFailure.create({
    type: CALLBACK_REJECTED,
    message: `merchant callback answered HTTP ${status}`,
    nonRetryable: true,
    details: [{ status }],
  });
}

function describeCause(err: unknown, deadline: AbortSignal): string {
  if (deadline.aborted) return 'no answer in time';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

function capped(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.min(ms, MAX_RATE_LIMIT_DELAY_MS);
}
