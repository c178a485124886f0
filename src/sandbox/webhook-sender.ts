import { Agent } from 'undici';
import type { Logger } from 'pino';
import { isoAt } from './clock';
import type { Timers } from './timers';
import type { Clock, WebhookDelivery } from './types';

export interface RetryPolicy {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 6, initialDelayMs: 500, maxDelayMs: 30_000, timeoutMs: 5_000 };

/**
 * Splits a URL into origin and the request target exactly as written (docs/bank-interface.md 6.1: "the service calls
 * the URL with that hash"): WHATWG parsing would normalise dot segments and percent-encoding, so the raw text
 * after the authority is used whenever it is a valid request target. The fragment is never sent.
 */
export function requestTarget(url: string): { origin: string; path: string } {
  const parsed = new URL(url);
  const authority = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/.exec(url.trim());
  let raw = authority ? url.trim().slice(authority[0].length) : '';
  const fragment = raw.indexOf('#');
  if (fragment >= 0) raw = raw.slice(0, fragment);
  if (raw === '' || raw.startsWith('?')) raw = `/${raw}`;
  if (!/^\/[\x21-\x7e]*$/.test(raw)) raw = parsed.pathname + parsed.search;
  return { origin: parsed.origin, path: raw };
}

export interface SendOptions {
  headers?: Record<string, string>;
  delayMs?: number;
}

export interface SendHandle {
  /** Settles when the first attempt finished (whatever its result). */
  firstAttempt: Promise<void>;
  /** Settles when the delivery reached its final outcome. */
  settled: Promise<void>;
}

/**
 * POSTs JSON webhooks with exponential backoff on non-2xx, connection error or timeout, and records every
 * attempt on the delivery record it is given (the ground truth the control reads).
 */
export class WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly deps: { timers: Timers; clock: Clock; logger: Logger; retry: RetryPolicy }) {
    this.agent = new Agent({ connect: { timeout: deps.retry.timeoutMs }, keepAliveTimeout: 1_000 });
  }

  send(delivery: WebhookDelivery, options: SendOptions = {}): SendHandle {
    let firstDone: () => void = () => undefined;
    const firstAttempt = new Promise<void>((resolve) => (firstDone = resolve));
    const settled = this.run(delivery, options, () => firstDone()).finally(() => firstDone());
    return { firstAttempt, settled };
  }

  async close(): Promise<void> {
    await this.agent.destroy().catch(() => undefined);
  }

  private async run(delivery: WebhookDelivery, options: SendOptions, onFirst: () => void): Promise<void> {
    const { timers, retry, logger } = this.deps;
    const cancelSignal = timers.signal;
    if (delivery.url === null) return;
    const { origin, path } = requestTarget(delivery.url);
    if (options.delayMs && options.delayMs > 0 && !(await timers.sleep(options.delayMs))) {
      delivery.outcome = 'cancelled';
      return;
    }
    for (let attempt = 1; attempt <= retry.attempts; attempt++) {
      if (attempt > 1) {
        const backoff = Math.min(retry.initialDelayMs * 2 ** (attempt - 2), retry.maxDelayMs);
        if (!(await timers.sleep(backoff))) break;
      }
      if (cancelSignal.aborted) break;
      const record = {
        attempt,
        at: isoAt(this.deps.clock()),
        status: null as number | null,
      } as WebhookDelivery['attempts'][number];
      delivery.attempts.push(record);
      try {
        const response = await this.agent.request({
          origin,
          path,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...options.headers },
          body: JSON.stringify(delivery.body),
          headersTimeout: retry.timeoutMs,
          bodyTimeout: retry.timeoutMs,
          signal: AbortSignal.any([cancelSignal, AbortSignal.timeout(retry.timeoutMs)]),
        });
        record.status = response.statusCode;
        // Always consume the body so the connection is released.
        await response.body.dump().catch(() => undefined);
      } catch (err) {
        record.error = errorCode(err);
      }
      if (attempt === 1) onFirst();
      logger.debug(
        { deliveryId: delivery.deliveryId, kind: delivery.kind, attempt, status: record.status, error: record.error },
        'webhook attempt',
      );
      if (record.status !== null && record.status >= 200 && record.status < 300) {
        delivery.outcome = 'delivered';
        return;
      }
    }
    delivery.outcome = cancelSignal.aborted ? 'cancelled' : 'failed';
    if (delivery.outcome === 'failed') {
      logger.warn({ deliveryId: delivery.deliveryId, kind: delivery.kind, attempts: retry.attempts }, 'webhook failed');
    }
  }
}

function errorCode(err: unknown): string {
  if (err && typeof err === 'object') {
    const { code, name, message } = err as { code?: unknown; name?: unknown; message?: unknown };
    if (typeof code === 'string') return code;
    if (typeof name === 'string' && name !== 'Error') return name;
    if (typeof message === 'string') return message;
  }
  return String(err);
}
