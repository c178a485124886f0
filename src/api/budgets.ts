import type { RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { MerchantDirectory } from '../config/merchants';
import type { Logger } from '../telemetry/logging';
import { merchantOf } from './authenticate';
import { ProblemError, ProblemType } from './problem-details';
import type { Metrics } from './metrics';

/**
 * Merchant budgets on the facade (docs/merchant-api.md, "Budgets"): each merchant's requests per minute and its
 * long-polls held at once, from its MerchantSettings.limits. Both are per API process (in memory): N processes
 * behind a balancer give a merchant up to N times its budget. Beyond a budget: 429 with Retry-After and a problem
 * body, counted in paylater_merchant_budget_refusals_total{merchant, budget}.
 */

/** The budget refusals' problem types are among the service's (src/api/problem-details.ts). */
export { ProblemType } from './problem-details';

/** The window of MerchantLimits.requestsPerMinute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Retry-After of a refused long-poll: one of the merchant's others answers within its timeout (at most 60 s). */
export const LONG_POLL_RETRY_AFTER_SECONDS = 1;

export interface BudgetDeps {
  merchants: Pick<MerchantDirectory, 'resolve'>;
  metrics: Pick<Metrics, 'budgetRefusals' | 'longPollsOpen'>;
  logger: Logger;
}

function authenticated(res: Response): string {
  const merchant = merchantOf(res);
  // Mounted after authenticate: an unauthenticated request never reaches (nor spends) a merchant's budget.
  if (merchant === undefined) throw new Error('request budget reached without an authenticated merchant');
  return merchant;
}

/**
 * Express middleware: at most `limits.requestsPerMinute` facade requests per merchant in each one-minute window
 * (express-rate-limit's fixed window, in this process's memory). Every answer carries the IETF RateLimit-Policy and
 * RateLimit headers (draft-ietf-httpapi-ratelimit-headers-08: quota, window, remaining, seconds to reset, and a
 * partition key hashed from the merchant's name); a refused one also Retry-After (seconds to the window's end).
 * Mount it right after `authenticate`.
 */
export function requestBudget(deps: BudgetDeps): RequestHandler {
  return rateLimit({
    windowMs: RATE_LIMIT_WINDOW_MS,
    limit: (_req, res) => deps.merchants.resolve(authenticated(res)).limits.requestsPerMinute,
    keyGenerator: (_req, res) => authenticated(res),
    identifier: 'merchant-requests',
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    // Keyed by merchant, never by address: the library's client-address checks do not apply.
    validate: { ip: false, trustProxy: false, xForwardedForHeader: false, forwardedHeader: false },
    // Store failures cannot happen with the in-memory store; were one swapped in, a failure refuses (a 500).
    passOnStoreError: false,
    logger: {
      warn: (err: unknown, message?: string) => deps.logger.warn({ err }, message ?? 'express-rate-limit'),
      error: (err: unknown, message?: string) => deps.logger.error({ err }, message ?? 'express-rate-limit'),
    },
    handler: (req, res, next, options) => {
      const merchant = authenticated(res);
      deps.metrics.budgetRefusals.inc({ merchant, budget: 'requests' });
      const limit = (req as { rateLimit?: { limit: number } }).rateLimit?.limit;
      next(
        new ProblemError(
          429,
          ProblemType.RateLimited,
          'Request budget exhausted',
          `More than ${limit ?? 'the allowed'} requests in ${options.windowMs / 1000} s for this merchant: retry after ` +
            `Retry-After seconds`,
        ),
      );
    },
  });
}

/**
 * Long-polls held at once, per merchant, in this process: `tryAcquire` gives a release function (idempotent) or
 * undefined when the merchant already holds `limits.maxLongPolls`.
 */
export class LongPollSlots {
  private readonly open = new Map<string, number>();

  constructor(private readonly deps: BudgetDeps) {}

  /** Held now by the merchant. */
  held(merchant: string): number {
    return this.open.get(merchant) ?? 0;
  }

  tryAcquire(merchant: string): (() => void) | undefined {
    const max = this.deps.merchants.resolve(merchant).limits.maxLongPolls;
    const held = this.held(merchant);
    if (held >= max) return undefined;
    this.set(merchant, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.set(merchant, this.held(merchant) - 1);
    };
  }

  /** The refusal of a long-poll over the merchant's budget (counted). */
  refusal(merchant: string): ProblemError {
    this.deps.metrics.budgetRefusals.inc({ merchant, budget: 'long_polls' });
    const max = this.deps.merchants.resolve(merchant).limits.maxLongPolls;
    return new ProblemError(
      429,
      ProblemType.TooManyLongPolls,
      'Too many long-polls',
      `This merchant already holds ${max} long-polls (waitForChangeFrom) at once: retry after one of them answers`,
      { retryAfterSeconds: LONG_POLL_RETRY_AFTER_SECONDS },
    );
  }

  private set(merchant: string, count: number): void {
    if (count > 0) this.open.set(merchant, count);
    else this.open.delete(merchant); // no entry kept for a merchant with none open
    this.deps.metrics.longPollsOpen.set({ merchant }, count);
  }
}
