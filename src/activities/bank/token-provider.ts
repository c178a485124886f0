import { createHash } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import { BANK_SCOPE } from '../../shared/bank-wire';
import {
  BankInvalidResponseError,
  BankRateLimitedError,
  BankRejectedError,
  BankUnauthorizedError,
  BankUnavailableError,
  truncate,
} from './errors';
import { classifyTransportError } from './transport-errors';
import { readBodyText, safeJson } from '../../http-client/body';
import { raceAbort, withDeadline } from '../../http-client/deadline';
import { parseRetryAfter } from '../../http-client/retry-after';
import { silentLogger, type BankLogger } from './logger';
import { bankErrorBodySchema, describeIssues, tokenResponseSchema } from './schemas';

/** What the bank client depends on: a token on demand, and a way to drop one the bank refused. */
export interface TokenProvider {
  /** A token valid for at least the refresh margin. `signal` stops this caller's wait, not a shared fetch. */
  getToken(signal?: AbortSignal): Promise<string>;
  /** Forgets `token` if it is still the cached one (a 401 proved it dead); a newer token is kept. */
  invalidate(token: string): void;
}

export interface ClientCredentialsTokenProviderOptions {
  /** Base address of the authorization service ({auth_url}); the token endpoint is `/oauth/v2/token` under it. */
  authUrl: string;
  clientId: string;
  clientSecret: string;
  /** The pooled dispatcher for authUrl's origin; the caller owns and closes it. */
  dispatcher: Dispatcher;
  scope?: string;
  /** Renew this long before expires_in runs out (capped at half the lifetime, for very short-lived tokens). */
  refreshMarginMs?: number;
  /** Deadline of one token request; shorter than the bank call deadline so a hanging auth server fails the call. */
  requestTimeoutMs?: number;
  /** Injectable clock (ms since epoch) so tests can expire tokens without waiting. */
  now?: () => number;
  logger?: BankLogger;
  /** Told of every token request's outcome (the worker's paylater_bank_token_requests_total). */
  onTokenRequest?: (outcome: TokenRequestOutcome) => void;
}

/** How a token request ended: a token, a non-2xx answer, an unreadable answer, or no answer (network, timeout). */
export type TokenRequestOutcome = 'ok' | 'refused' | 'invalid_response' | 'failed';

export const DEFAULT_REFRESH_MARGIN_MS = 60_000;
export const DEFAULT_TOKEN_TIMEOUT_MS = 8_000;

interface CachedToken {
  token: string;
  refreshAt: number;
}

/**
 * OAuth 2.0 client-credentials tokens (docs/bank-interface.md 4.1, 5), modelled on Azure's tokenCycler: one cached
 * token, one shared in-flight request for all concurrent callers, and a failed request leaves nothing behind
 * so the next caller tries again.
 */
export class ClientCredentialsTokenProvider implements TokenProvider {
  private cached: CachedToken | undefined;
  private inFlight: Promise<CachedToken> | undefined;
  private readonly tokenUrl: string;
  private readonly now: () => number;
  private readonly logger: BankLogger;

  constructor(private readonly options: ClientCredentialsTokenProviderOptions) {
    this.tokenUrl = `${options.authUrl.replace(/\/+$/, '')}/oauth/v2/token`;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
  }

  async getToken(signal?: AbortSignal): Promise<string> {
    const cached = this.cached;
    if (cached && this.now() < cached.refreshAt) return cached.token;
    if (!this.inFlight) {
      const fetching = this.fetchToken().finally(() => {
        this.inFlight = undefined;
      });
      // Every caller may have given up (aborted) before it settles; the rejection is still theirs, not unhandled.
      fetching.catch(() => undefined);
      this.inFlight = fetching;
    }
    // The shared request is not tied to any one caller's signal: one cancelled activity must not fail the rest.
    return (await raceAbort(this.inFlight, signal)).token;
  }

  invalidate(token: string): void {
    if (this.cached?.token === token) {
      this.cached = undefined;
      this.logger.info('Bank access token dropped after the bank refused it');
    }
  }

  private async fetchToken(): Promise<CachedToken> {
    let outcome: TokenRequestOutcome = 'failed';
    try {
      const token = await this.requestToken((o) => (outcome = o));
      outcome = 'ok';
      return token;
    } finally {
      this.options.onTokenRequest?.(outcome);
    }
  }

  private async requestToken(setOutcome: (outcome: TokenRequestOutcome) => void): Promise<CachedToken> {
    const { clientId, clientSecret, dispatcher } = this.options;
    const timeoutMs = this.options.requestTimeoutMs ?? DEFAULT_TOKEN_TIMEOUT_MS;
    const { signal, deadline } = withDeadline(undefined, timeoutMs);
    const body = new URLSearchParams({
      client_id: clientId,
      client_secret: clientSecret,
      grant_type: 'client_credentials',
      scope: this.options.scope ?? BANK_SCOPE,
    }).toString();

    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const res = await request(this.tokenUrl, {
        method: 'POST',
        dispatcher,
        signal,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
      });
      status = res.statusCode;
      retryAfter = res.headers['retry-after'];
      text = (await readBodyText(res.body)).text;
    } catch (err) {
      const classified = classifyTransportError('token', err, undefined, deadline);
      this.logger.warn('Bank token request failed', { error: describe(classified) });
      throw classified;
    }

    if (status < 200 || status > 299) {
      setOutcome('refused');
      const failure = this.errorFor(status, text, retryAfter);
      this.logger.warn('Bank token request refused', { status, error: failure.message });
      throw failure;
    }

    const parsed = tokenResponseSchema.safeParse(safeJson(text));
    if (!parsed.success) {
      setOutcome('invalid_response');
      const failure = new BankInvalidResponseError('token', status, describeIssues(parsed.error));
      this.logger.warn('Bank token response invalid', { status, error: failure.message });
      throw failure;
    }
    const lifetimeMs = parsed.data.expires_in * 1000;
    const marginMs = Math.min(this.options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS, lifetimeMs / 2);
    const token: CachedToken = { token: parsed.data.access_token, refreshAt: this.now() + lifetimeMs - marginMs };
    this.cached = token;
    this.logger.info('Bank access token obtained', { expiresInSeconds: parsed.data.expires_in });
    return token;
  }

  private errorFor(status: number, text: string, retryAfter: string | string[] | undefined): Error {
    // The token endpoint's answer could in theory echo what we sent: scrub the secret before keeping any of it.
    const detail = redact(bankMessage(text), this.options.clientSecret);
    if (status === 429) return new BankRateLimitedError('token', parseRetryAfter(retryAfter, this.now()));
    if (status >= 500) return new BankUnavailableError('token', `token endpoint answered HTTP ${status}`, { status });
    // OAuth 2.0 answers bad client credentials with 400 invalid_client or 401 (RFC 6749 5.2).
    const oauthError = bankErrorCode(text);
    if (status === 401 || status === 403 || oauthError === 'invalid_client' || oauthError === 'unauthorized_client') {
      return new BankUnauthorizedError('token', status, detail);
    }
    return new BankRejectedError('token', status, oauthError, detail);
  }
}

/** Longest bank `message` kept: one line, what it says, never what the body carries around it. */
const MAX_BANK_MESSAGE_CHARS = 256;
/** A bank `error` code as the bank's document shows them (`invalid_request`); anything else is not kept. */
const BANK_ERROR_CODE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * What an error answer of the bank says, never its raw body (section 7 leaves bodies open: a gateway's HTML page, an
 * echo of our request with a customer's data): the `message` of a `{ error, message }` body (or OAuth's
 * `error_description`) on one line, bounded; otherwise a summary, its size and a digest to match it with the bank's
 * own logs. It travels in errors, failures and log lines.
 */
export function bankMessage(text: string): string | undefined {
  const json = safeJson(text);
  if (json && typeof json === 'object' && !Array.isArray(json)) {
    const { message, error_description: description } = json as Record<string, unknown>;
    const said = typeof message === 'string' ? message : typeof description === 'string' ? description : undefined;
    // Control characters (a log line's newline among them) become spaces.
    // eslint-disable-next-line no-control-regex
    const line = said?.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
    if (line) return truncate(line, MAX_BANK_MESSAGE_CHARS);
  }
  if (!text.trim()) return undefined;
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const kind = json === undefined ? 'a body that is not JSON' : 'a JSON body without a message';
  return `${kind} (${Buffer.byteLength(text)} bytes, sha256 ${digest}…; not kept)`;
}

/** The `error` code of a `{ error, message }` body, when it is one (a bounded token); else undefined. */
export function bankErrorCode(text: string): string | undefined {
  const body = bankErrorBodySchema.safeParse(safeJson(text));
  const code = body.success ? body.data.error : undefined;
  return code !== undefined && BANK_ERROR_CODE.test(code) ? code : undefined;
}

/** Removes the secret as sent (form-encoded) and as plain text. */
function redact(text: string | undefined, secret: string): string | undefined {
  if (!text || !secret) return text;
  const formEncoded = new URLSearchParams({ s: secret }).toString().slice(2);
  return [formEncoded, encodeURIComponent(secret), secret].reduce((t, s) => t.split(s).join('[redacted]'), text);
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
