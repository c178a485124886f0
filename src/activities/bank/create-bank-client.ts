import { Pool } from 'undici';
import { BankClient, DEFAULT_CALL_TIMEOUT_MS } from './bank-client';
import type { BankLogger } from './logger';
import { ClientCredentialsTokenProvider, type TokenProvider, type TokenRequestOutcome } from './token-provider';

export interface BankPoolOptions {
  /** Sockets per origin. */
  connections?: number;
  connectTimeoutMs?: number;
  /** Time to the response headers: the bank's own processing time. */
  headersTimeoutMs?: number;
  /** Longest silence while reading a body. */
  bodyTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
}

export interface CreateBankClientOptions {
  /** {auth_url} of docs/bank-interface.md; the token endpoint is `${authUrl}/oauth/v2/token`. */
  authUrl: string;
  /** {base_url} of docs/bank-interface.md. */
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
  pool?: BankPoolOptions;
  /** Deadline of one bank call including token wait and the 401 retry (default 20 s, under the 30 s activity timeout). */
  callTimeoutMs?: number;
  /** Deadline of one token request (default 8 s). */
  tokenTimeoutMs?: number;
  /** Renew a token this long before it expires (default 60 s, at most half its lifetime). */
  tokenRefreshMarginMs?: number;
  now?: () => number;
  logger?: BankLogger;
  /** Told of every token request's outcome (metrics). */
  onTokenRequest?: (outcome: TokenRequestOutcome) => void;
}

export interface BankClientHandle {
  client: BankClient;
  tokens: TokenProvider;
  /** Closes the pools (one per origin); in-flight requests finish first. Call once, at worker shutdown. */
  close(): Promise<void>;
}

/** Pool defaults: every HTTP timeout is below the bank call deadline, itself below the activity timeout. */
export const DEFAULT_POOL_OPTIONS: Required<BankPoolOptions> = {
  connections: 32,
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  keepAliveTimeoutMs: 30_000,
};

/**
 * Builds the bank client for a worker: one undici Pool per origin (the auth service and the API share one
 * when they share an origin), the client-credentials token provider, and the client. The caller owns the
 * returned handle and must close() it.
 */
export function createBankClient(options: CreateBankClientOptions): BankClientHandle {
  const poolOptions = { ...DEFAULT_POOL_OPTIONS, ...options.pool };
  const pools = new Map<string, Pool>();
  const poolFor = (url: string): Pool => {
    const origin = new URL(url).origin;
    let pool = pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: poolOptions.connections,
        connectTimeout: poolOptions.connectTimeoutMs,
        headersTimeout: poolOptions.headersTimeoutMs,
        bodyTimeout: poolOptions.bodyTimeoutMs,
        keepAliveTimeout: poolOptions.keepAliveTimeoutMs,
        keepAliveMaxTimeout: Math.max(poolOptions.keepAliveTimeoutMs, 60_000),
      });
      pools.set(origin, pool);
    }
    return pool;
  };

  const tokens = new ClientCredentialsTokenProvider({
    authUrl: options.authUrl,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    dispatcher: poolFor(options.authUrl),
    scope: options.scope,
    refreshMarginMs: options.tokenRefreshMarginMs,
    requestTimeoutMs: options.tokenTimeoutMs,
    now: options.now,
    logger: options.logger,
    onTokenRequest: options.onTokenRequest,
  });
  const client = new BankClient({
    baseUrl: options.baseUrl,
    dispatcher: poolFor(options.baseUrl),
    tokens,
    callTimeoutMs: options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
    now: options.now,
    logger: options.logger,
  });

  let closing: Promise<void> | undefined;
  return {
    client,
    tokens,
    close: () => (closing ??= Promise.all([...pools.values()].map((pool) => pool.close())).then(() => undefined)),
  };
}
