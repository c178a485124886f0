import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TransactionBatch } from './truth';
import { sleep } from '../harness/processes';

/**
 * The merchant's side of a chaos run: its callback endpoint (finance callbacks and transaction batches, recorded
 * by Idempotency-Key) and its calls to the facade, retried on 503 as a merchant would.
 */

export interface MerchantEndpoint {
  origin: string;
  financeUrl: string;
  transactionsUrl: string;
  /** Idempotency-Keys of finance callbacks received. */
  financeKeys: Set<string>;
  transactionBatches: TransactionBatch[];
  close(): Promise<void>;
}

export async function startMerchantEndpoint(): Promise<MerchantEndpoint> {
  const financeKeys = new Set<string>();
  const transactionBatches: TransactionBatch[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = String(req.headers['idempotency-key'] ?? '');
      try {
        const payload = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: Record<string, unknown> };
        // The Standard Webhooks payload (the current version): the event's fields are in `data`.
        const body = payload.data ?? {};
        if (req.url?.startsWith('/transactions')) {
          transactionBatches.push({
            key,
            consentId: String(body.consentId),
            events: Number(body.events ?? 0),
            accounts: ((body.accounts as { accountId: string }[] | undefined) ?? []).map((a) => a.accountId),
          });
        } else financeKeys.add(key);
        res.writeHead(200).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    financeUrl: `${origin}/finance`,
    transactionsUrl: `${origin}/transactions`,
    financeKeys,
    transactionBatches,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface FacadeCall {
  route: string;
  status: number | null;
  ms: number;
  at: number;
}

export interface FacadeResponse {
  status: number | null;
  body: unknown;
  retryAfter?: number;
}

/** The facade of each API process (internal listener), with the merchant's key; every call is timed. */
export class Facade {
  readonly calls: FacadeCall[] = [];

  constructor(
    private readonly internalUrls: string[],
    private readonly apiKey: string,
  ) {}

  async request(
    api: number,
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = 40_000,
  ): Promise<FacadeResponse> {
    const url = `${this.internalUrls[api % this.internalUrls.length]}${path}`;
    const started = Date.now();
    const route = `${method} ${path.replace(/^\/(applications|consents)\/[^/]+/, '/$1/:id')}`;
    try {
      const res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      this.calls.push({ route, status: res.status, ms: Date.now() - started, at: started });
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      const retryAfter = Number(res.headers.get('retry-after'));
      return { status: res.status, body: parsed, retryAfter: Number.isFinite(retryAfter) ? retryAfter : undefined };
    } catch (err) {
      this.calls.push({ route, status: null, ms: Date.now() - started, at: started });
      return { status: null, body: (err as Error).message };
    }
  }

  /**
   * A start call retried as a merchant would: on 503 (after Retry-After, at most 2 s) or no answer, with the same
   * body (the reference or consent makes it idempotent), until another answer or `giveUpMs` passed.
   */
  /** PUT /consents/:id (the merchant claims the consent) until it answers 200 or 201: an API may be starting. */
  async claimConsent(consentId: string): Promise<void> {
    for (let attempt = 0; attempt < 30; attempt++) {
      const res = await this.request(attempt, 'PUT', `/consents/${consentId}`);
      if (res.status === 200 || res.status === 201) return;
      await sleep(1_000);
    }
    throw new Error(`PUT /consents/${consentId} never answered 200 or 201`);
  }

  async startWithRetry(api: number, path: string, body: unknown, giveUpMs: number): Promise<FacadeResponse> {
    const deadline = Date.now() + giveUpMs;
    for (let attempt = 0; ; attempt++) {
      // Alternate API processes on retries: one that is down should not stop a merchant.
      const res = await this.request(api + attempt, 'POST', path, body);
      if (res.status !== null && res.status !== 503) return res;
      if (Date.now() > deadline) return res;
      await sleep(Math.min(2_000, (res.retryAfter ?? 1) * 1_000));
    }
  }
}
