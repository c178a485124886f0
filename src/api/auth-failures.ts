import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, MemoryStore, rateLimit, type RateLimitRequestHandler } from 'express-rate-limit';
import { DEFAULT_FAILED_AUTHENTICATIONS, FAILED_AUTHENTICATIONS_WINDOW_MS } from '../config/schema';
import type { Logger } from '../telemetry/logging';
import type { Metrics } from './metrics';
import { PROBLEM_TITLES, ProblemError, ProblemType } from './problem-details';
import { appendRateLimitFields } from './rate-limit-fields';

/** Where a key was tried: the `surface` label of paylater_authentication_refusals_total. */
export type AuthSurface = 'merchant_api' | 'operator_api' | 'console';

/** The IETF rate-limit policy's name on the answers of a failed authentication. */
export const FAILED_AUTHENTICATIONS_POLICY = 'failed-authentications';

export interface FailedAuthenticationsDeps {
  metrics: Pick<Metrics, 'authRefusals' | 'consoleSignInRefusals'>;
  /** The refusal's one info line per address and window (the address, never a key); absent: none. */
  logger?: Logger;
  /** FAILED_AUTHENTICATIONS_PER_15_MINUTES; default DEFAULT_FAILED_AUTHENTICATIONS (10). */
  attempts?: number;
  /** Default FAILED_AUTHENTICATIONS_WINDOW_MS (15 minutes); tests shorten it. */
  windowMs?: number;
}

/** The client address a failure counts against: the connection's (`trust proxy` is off), an IPv6 one by its /56. */
function clientAddress(req: Request): string {
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

/**
 * Failed authentications per client address, one count for every merchant and operator route of the process (the
 * API's `authenticate`, /codec's `authenticateOperator`, the console's sign-in; docs/security.md): a key that was
 * presented and is no one's counts (no key at all is not a guess, and does not). Once an address has `attempts`
 * failures in the window (express-rate-limit's fixed window, in this process's memory), every further request from
 * it on those routes is refused with 429 before its key is read or compared, a right key included, until the window
 * ends: Retry-After (seconds to the window's end), the IETF RateLimit-Policy and RateLimit fields (policy
 * `failed-authentications`) and a problem `…/too-many-wrong-keys`; counted in
 * paylater_authentication_refusals_total{surface}. The bank's webhook routes never use it: a forged webhook is a 401,
 * never a lockout of the bank's address.
 *
 * The address is the socket's: X-Forwarded-For is not trusted (one client cannot spread its guesses over invented
 * addresses), so behind a proxy everything through it shares one count (docs/console.md, "Sign-in limit").
 */
export class FailedAuthentications {
  readonly attempts: number;
  readonly windowMs: number;
  private readonly counter: RateLimitRequestHandler;
  /** The counts, read by `gate` without counting. */
  private readonly store = new MemoryStore();

  constructor(private readonly deps: FailedAuthenticationsDeps) {
    this.attempts = deps.attempts ?? DEFAULT_FAILED_AUTHENTICATIONS;
    this.windowMs = deps.windowMs ?? FAILED_AUTHENTICATIONS_WINDOW_MS;
    this.counter = rateLimit({
      windowMs: this.windowMs,
      limit: this.attempts,
      store: this.store,
      keyGenerator: clientAddress,
      identifier: FAILED_AUTHENTICATIONS_POLICY,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      requestPropertyName: 'failedAuthentications',
      // The socket's address on purpose: a proxy's X-Forwarded-For or Forwarded is not trusted, so no warning about it.
      validate: { xForwardedForHeader: false, forwardedHeader: false },
      passOnStoreError: false,
      logger: {
        warn: (err: unknown, message?: string) => deps.logger?.warn({ err }, message ?? 'express-rate-limit'),
        error: (err: unknown, message?: string) => deps.logger?.error({ err }, message ?? 'express-rate-limit'),
      },
      // Only when two failures of one address raced past the gate: the gate refuses the others before counting.
      handler: (req, res, next) => {
        const info = (req as { failedAuthentications?: { key: string; used: number } }).failedAuthentications;
        const retryAfterSeconds = Number(res.getHeader('Retry-After')) || this.windowSeconds();
        if (info) this.logFirstRefusal(info.key, info.used, res, retryAfterSeconds);
        next(this.refusal(res, retryAfterSeconds));
      },
    });
  }

  /**
   * Middleware in front of a key check: an address already at its failures is refused (429) here, before anything
   * of the request is read; any other goes on.
   */
  gate(surface: AuthSurface): RequestHandler {
    return (req, res, next) => {
      (res.locals as { authSurface?: AuthSurface }).authSurface = surface;
      const key = clientAddress(req);
      this.refused(key, res)
        .then((resetSeconds) => {
          if (resetSeconds === undefined) return next();
          appendRateLimitFields(
            res,
            { name: FAILED_AUTHENTICATIONS_POLICY, quota: this.attempts, windowSeconds: this.windowSeconds(), key },
            { remaining: 0, resetSeconds },
          );
          res.setHeader('Retry-After', String(resetSeconds));
          next(this.refusal(res, resetSeconds));
        })
        .catch(next);
    };
  }

  /**
   * Counts the request's wrong key against its address: `answer()` (the route's own 401) while the address is
   * within its failures, or the 429 through `next` when this one goes over. Call it after `gate`, once per request.
   */
  fail(req: Request, res: Response, next: NextFunction, answer: () => void): void {
    void this.counter(req, res, (err?: unknown) => (err === undefined ? answer() : next(err)));
  }

  /**
   * The seconds to the window's end when the address is at its failures (the refused request counted, so that the
   * first refusal of a window is told apart and logged), else undefined.
   */
  private async refused(key: string, res: Response): Promise<number | undefined> {
    const info = await this.store.get(key);
    if (info === undefined || info.totalHits < this.attempts) return undefined;
    const { totalHits, resetTime } = await this.store.increment(key);
    const resetSeconds = Math.ceil((resetTime ? resetTime.getTime() - Date.now() : 0) / 1000);
    // The window ended meanwhile: this increment began a new one, and this request is judged by its key.
    if (totalHits <= this.attempts || resetSeconds <= 0) {
      if (totalHits <= this.attempts) await this.store.decrement(key);
      return undefined;
    }
    this.logFirstRefusal(key, totalHits, res, resetSeconds);
    return resetSeconds;
  }

  /** One info line per address and window, at its first refusal: the address and the wait, never a key. */
  private logFirstRefusal(key: string, totalHits: number, res: Response, retryAfterSeconds: number): void {
    if (totalHits !== this.attempts + 1) return;
    this.deps.logger?.info(
      { clientAddress: key, surface: surfaceOf(res), retryAfterSeconds },
      'authentication refused: too many failed authentications from this address',
    );
  }

  private windowSeconds(): number {
    return Math.ceil(this.windowMs / 1000);
  }

  private refusal(res: Response, retryAfterSeconds: number): ProblemError {
    const surface = surfaceOf(res);
    this.deps.metrics.authRefusals.inc({ surface });
    if (surface === 'console') this.deps.metrics.consoleSignInRefusals.inc();
    return new ProblemError(
      429,
      ProblemType.TooManyWrongKeys,
      PROBLEM_TITLES[ProblemType.TooManyWrongKeys],
      'Too many wrong keys from this address: retry after Retry-After seconds',
      { retryAfterSeconds },
    );
  }
}

function surfaceOf(res: Response): AuthSurface {
  return (res.locals as { authSurface?: AuthSurface }).authSurface ?? 'merchant_api';
}
