import { request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import type {
  ApplicationStatusResponse,
  CreateApplicationRequest,
  CreateApplicationResponse,
  RefreshRequest,
  RefreshResponse,
} from '../../shared/bank-wire';
import {
  BankInvalidResponseError,
  BankRateLimitedError,
  BankRejectedError,
  BankUnauthorizedError,
  BankUnavailableError,
  type BankOperation,
} from './errors';
import { classifyTransportError } from './transport-errors';
import { discardBody, readBodyText } from '../../http-client/body';
import { raceAbort, withDeadline } from '../../http-client/deadline';
import { parseRetryAfter } from '../../http-client/retry-after';
import { silentLogger, type BankLogger } from './logger';
import {
  applicationStatusResponseSchema,
  createApplicationResponseSchema,
  describeIssues,
  refreshResponseSchema,
} from './schemas';
import { bankErrorCode, bankMessage, type TokenProvider } from './token-provider';

export interface BankClientOptions {
  /** Base address of the banking API ({base_url}); may carry a path prefix. */
  baseUrl: string;
  /** The pooled dispatcher for baseUrl's origin; the caller owns and closes it. */
  dispatcher: Dispatcher;
  tokens: TokenProvider;
  /**
   * Deadline of one bank call, token wait and the single 401 retry included. Keep it below the activity's
   * startToCloseTimeout (30 s in src/workflows/activity-options.ts) so the activity reports the bank's failure.
   */
  callTimeoutMs?: number;
  now?: () => number;
  logger?: BankLogger;
}

export interface CallOptions {
  /** The activity's cancellation signal: aborting it cancels the HTTP request. */
  signal?: AbortSignal;
}

export const DEFAULT_CALL_TIMEOUT_MS = 20_000;

interface Call<T> {
  operation: BankOperation;
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
  schema: z.ZodType<T>;
}

/** The bank's API (docs/bank-interface.md 4.2-4.4) over undici. Throws only the typed errors of ./errors. */
export class BankClient {
  private readonly baseUrl: string;
  private readonly callTimeoutMs: number;
  private readonly now: () => number;
  private readonly logger: BankLogger;

  constructor(private readonly options: BankClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
  }

  /** POST /applications. The body is the merchant's, passed on whole (bank-wire.ts decision). */
  createApplication(body: CreateApplicationRequest, opts: CallOptions = {}): Promise<CreateApplicationResponse> {
    return this.call(
      {
        operation: 'createApplication',
        method: 'POST',
        path: '/applications',
        body,
        schema: createApplicationResponseSchema,
      },
      opts,
    );
  }

  /** GET /applications/{applicationId}/status. */
  getApplicationStatus(applicationId: string, opts: CallOptions = {}): Promise<ApplicationStatusResponse> {
    return this.call(
      {
        operation: 'getApplicationStatus',
        method: 'GET',
        path: `/applications/${encodeURIComponent(applicationId)}/status`,
        schema: applicationStatusResponseSchema,
      },
      opts,
    );
  }

  /**
   * PUT /refresh. How consentId is supplied is not shown by the bank: our decision (bank-wire.ts) is a JSON
   * body `{ consentId }`, and this is the only place that knows it.
   */
  startRefresh(consentId: string, opts: CallOptions = {}): Promise<RefreshResponse> {
    const body: RefreshRequest = { consentId };
    return this.call(
      { operation: 'startRefresh', method: 'PUT', path: '/refresh', body, schema: refreshResponseSchema },
      opts,
    );
  }

  private async call<T>(call: Call<T>, opts: CallOptions): Promise<T> {
    const { signal, deadline } = withDeadline(opts.signal, this.callTimeoutMs);
    const attempt = async (): Promise<{
      token: string;
      status: number;
      headers: Dispatcher.ResponseData['headers'];
      text?: string;
    }> => {
      const token = await raceAbort(this.options.tokens.getToken(signal), signal);
      const res = await request(`${this.baseUrl}${call.path}`, {
        method: call.method,
        dispatcher: this.options.dispatcher,
        signal,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
      });
      if (res.statusCode === 401) {
        await discardBody(res.body);
        return { token, status: 401, headers: res.headers };
      }
      const { text, truncated } = await readBodyText(res.body);
      if (truncated && res.statusCode >= 200 && res.statusCode <= 299) {
        throw new BankInvalidResponseError(call.operation, res.statusCode, 'body too large');
      }
      return { token, status: res.statusCode, headers: res.headers, text };
    };

    try {
      let res = await attempt();
      if (res.status === 401) {
        // A token the bank revoked or expired early: drop it and try exactly once more with a fresh one.
        this.logger.info('Bank answered 401; retrying once with a fresh token', { operation: call.operation });
        this.options.tokens.invalidate(res.token);
        res = await attempt();
        if (res.status === 401) {
          this.options.tokens.invalidate(res.token);
          throw new BankUnauthorizedError(call.operation, 401, 'still refused after a fresh token');
        }
      }
      return this.interpret(call, res.status, res.headers, res.text ?? '');
    } catch (err) {
      throw classifyTransportError(call.operation, err, opts.signal, deadline);
    }
  }

  private interpret<T>(call: Call<T>, status: number, headers: Dispatcher.ResponseData['headers'], text: string): T {
    if (status >= 200 && status <= 299) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new BankInvalidResponseError(call.operation, status, 'body is not JSON');
      }
      const parsed = call.schema.safeParse(json);
      if (!parsed.success) throw new BankInvalidResponseError(call.operation, status, describeIssues(parsed.error));
      return parsed.data;
    }
    if (status === 429)
      throw new BankRateLimitedError(call.operation, parseRetryAfter(headers['retry-after'], this.now()));
    if (status === 403) throw new BankUnauthorizedError(call.operation, status, bankMessage(text));
    // 408 is the bank giving up on a slow request: as transient as a 5xx.
    if (status >= 500 || status === 408) {
      throw new BankUnavailableError(call.operation, `bank answered HTTP ${status}`, { status });
    }
    // 3xx are not followed (the bank documents none) and count as a refusal like 4xx.
    throw new BankRejectedError(call.operation, status, bankErrorCode(text), bankMessage(text));
  }
}
