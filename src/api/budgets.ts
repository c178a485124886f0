import type { RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { Client } from '@temporalio/client';
import type { MerchantDirectory, MerchantLimits } from '../config/merchants';
import type { Logger } from '../telemetry/logging';
import { countMerchantTotal, type MerchantTotal } from '../client/merchant-totals';
import type { MerchantScope } from '../client/merchant-scope';
import { merchantOf } from './authenticate';
import { PROBLEM_TITLES, ProblemError, ProblemType } from './problem-details';
import type { Metrics } from './metrics';
import { appendRateLimitFields } from './rate-limit-fields';

/**
 * Merchant budgets (docs/merchant-api.md, "Budgets"), from each merchant's MerchantSettings.limits, on the API and
 * the console alike:
 * - per minute, per API process (express-rate-limit's fixed window, in memory): every request; creations
 *   (POST /applications); refreshes started (POST /consents/:id/refresh);
 * - held at once, per API process: long-polls (the API's and the console's live timeline), console live pages;
 * - in total, across every API process: claimed consents and open applications, counted in Temporal (a visibility
 *   count, cached briefly) rather than in memory.
 * Beyond a budget: 429 with Retry-After, the IETF RateLimit-Policy and RateLimit fields of its policy and a problem
 * body (the console: its own page), counted in paylater_merchant_budget_refusals_total{merchant, budget}.
 */

/** The budget refusals' problem types are among the service's (src/api/problem-details.ts). */
export { ProblemType } from './problem-details';

/** The window of the per-minute budgets. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Retry-After of a refused long-poll or live page: one of the merchant's others answers within its timeout. */
export const LONG_POLL_RETRY_AFTER_SECONDS = 1;

/** How long a count of a merchant's totals from Temporal is used before it is read again. */
export const DEFAULT_TOTALS_TTL_MS = 5_000;

/** Retry-After of a refusal over a total: one of the merchant's applications must end, or a consent be released. */
export const TOTALS_RETRY_AFTER_SECONDS = 30;

/** The `budget` label of paylater_merchant_budget_refusals_total. */
export type BudgetName = 'requests' | 'creations' | 'refreshes' | 'long_polls' | 'live_pages' | MerchantTotal;

export interface BudgetDeps {
  merchants: Pick<MerchantDirectory, 'resolve'>;
  metrics: Pick<Metrics, 'budgetRefusals' | 'longPollsOpen' | 'livePagesOpen'>;
  logger: Logger;
}

function authenticated(res: Response): string {
  const merchant = merchantOf(res);
  // Mounted after authenticate: an unauthenticated request never reaches (nor spends) a merchant's budget.
  if (merchant === undefined) throw new Error('merchant budget reached without an authenticated merchant');
  return merchant;
}

/** One per-minute budget: its label, the IETF policy's name, the merchant's limit and what it counts (in words). */
interface PerMinuteBudget {
  budget: 'requests' | 'creations' | 'refreshes';
  policy: string;
  limit: (limits: MerchantLimits) => number;
  what: string;
}

/**
 * Express middleware: at most `budget.limit(limits)` of the merchant's requests through it in each one-minute window
 * (express-rate-limit's fixed window, in this process's memory). Every answer carries the IETF RateLimit-Policy and
 * RateLimit fields (draft-ietf-httpapi-ratelimit-headers-08: quota, window, remaining, seconds to reset, and a
 * partition key hashed from the merchant's name), appended to those of the budgets it went through before; a refused
 * one also Retry-After (seconds to the window's end). Mount it after `authenticate` (or the console's session).
 */
function perMinute(deps: BudgetDeps, budget: PerMinuteBudget): RequestHandler {
  return rateLimit({
    windowMs: RATE_LIMIT_WINDOW_MS,
    limit: (_req, res) => budget.limit(deps.merchants.resolve(authenticated(res)).limits),
    keyGenerator: (_req, res) => authenticated(res),
    identifier: budget.policy,
    requestPropertyName: `budget-${budget.budget}`,
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
    handler: (_req, res, next, options) => {
      const merchant = authenticated(res);
      deps.metrics.budgetRefusals.inc({ merchant, budget: budget.budget });
      const limit = budget.limit(deps.merchants.resolve(merchant).limits);
      next(
        new ProblemError(
          429,
          ProblemType.RateLimited,
          PROBLEM_TITLES[ProblemType.RateLimited],
          `More than ${limit} ${budget.what} in ${options.windowMs / 1000} s for this merchant: retry after ` +
            `Retry-After seconds`,
        ),
      );
    },
  });
}

/** Every request of the merchant (API and console) per minute: `limits.requestsPerMinute`. */
export function requestBudget(deps: BudgetDeps): RequestHandler {
  return perMinute(deps, {
    budget: 'requests',
    policy: 'merchant-requests',
    limit: (l) => l.requestsPerMinute,
    what: 'requests',
  });
}

/** Applications created (POST /applications, each one, whatever its answer) per minute: `limits.creationsPerMinute`. */
export function creationBudget(deps: BudgetDeps): RequestHandler {
  return perMinute(deps, {
    budget: 'creations',
    policy: 'merchant-creations',
    limit: (l) => l.creationsPerMinute,
    what: 'application creations (POST /applications)',
  });
}

/** Refreshes started (POST /consents/:id/refresh, each one) per minute: `limits.refreshesPerMinute`. */
export function refreshBudget(deps: BudgetDeps): RequestHandler {
  return perMinute(deps, {
    budget: 'refreshes',
    policy: 'merchant-refreshes',
    limit: (l) => l.refreshesPerMinute,
    what: 'consent refreshes (POST /consents/{consentId}/refresh)',
  });
}

/** What a budget of things held at once is about: long-polls, console live pages. */
interface HeldBudget {
  budget: 'long_polls' | 'live_pages';
  policy: string;
  limit: (limits: MerchantLimits) => number;
  gauge: (metrics: BudgetDeps['metrics']) => BudgetDeps['metrics']['longPollsOpen'];
  type: string;
  detail: (max: number) => string;
}

/**
 * Things held at once, per merchant, in this process: `tryAcquire` gives a release function (idempotent) or
 * undefined when the merchant already holds its most.
 */
export class HeldSlots {
  private readonly open = new Map<string, number>();

  constructor(
    private readonly deps: BudgetDeps,
    private readonly spec: HeldBudget,
  ) {}

  /** Held now by the merchant. */
  held(merchant: string): number {
    return this.open.get(merchant) ?? 0;
  }

  tryAcquire(merchant: string): (() => void) | undefined {
    const max = this.max(merchant);
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

  /** The refusal of one over the merchant's budget (counted; its RateLimit fields on `res` when given). */
  refusal(merchant: string, res?: Response): ProblemError {
    this.deps.metrics.budgetRefusals.inc({ merchant, budget: this.spec.budget });
    const max = this.max(merchant);
    if (res)
      appendRateLimitFields(
        res,
        { name: this.spec.policy, quota: max, key: merchant },
        { remaining: 0, resetSeconds: LONG_POLL_RETRY_AFTER_SECONDS },
      );
    return new ProblemError(
      429,
      this.spec.type,
      PROBLEM_TITLES[this.spec.type as keyof typeof PROBLEM_TITLES],
      this.spec.detail(max),
      { retryAfterSeconds: LONG_POLL_RETRY_AFTER_SECONDS },
    );
  }

  private max(merchant: string): number {
    return this.spec.limit(this.deps.merchants.resolve(merchant).limits);
  }

  private set(merchant: string, count: number): void {
    if (count > 0) this.open.set(merchant, count);
    else this.open.delete(merchant); // no entry kept for a merchant with none open
    this.spec.gauge(this.deps.metrics).set({ merchant }, count);
  }
}

/** Long-polls held at once per merchant (`limits.maxLongPolls`): the API's waitForChangeFrom and the console's live timeline. */
export class LongPollSlots extends HeldSlots {
  constructor(deps: BudgetDeps) {
    super(deps, {
      budget: 'long_polls',
      policy: 'merchant-long-polls',
      limit: (l) => l.maxLongPolls,
      gauge: (m) => m.longPollsOpen,
      type: ProblemType.TooManyLongPolls,
      detail: (max) =>
        `This merchant already holds ${max} long-polls (waitForChangeFrom, the console's live pages) at once: retry ` +
        'after one of them answers',
    });
  }
}

/** Console live pages (a fragment waiting for a change) held at once per merchant (`limits.maxLivePages`). */
export class LivePageSlots extends HeldSlots {
  constructor(deps: BudgetDeps) {
    super(deps, {
      budget: 'live_pages',
      policy: 'merchant-live-pages',
      limit: (l) => l.maxLivePages,
      gauge: (m) => m.livePagesOpen,
      type: ProblemType.TooManyLivePages,
      detail: (max) => `This merchant already holds ${max} live console pages at once: retry shortly`,
    });
  }
}

/** A start admitted under a total: say whether it started something (counted until the next count) or not. */
export interface Admission {
  settle(started: boolean): void;
}

interface TotalCount {
  /** Temporal's count when last read, and when. */
  counted: number;
  at: number;
  /** Starts admitted by this process and not settled yet. */
  pending: number;
  /** Starts this process made since `counted` was asked for (not in it yet). */
  started: number;
  reading?: Promise<void>;
}

export interface MerchantTotalsDeps extends BudgetDeps {
  client: Client;
  /** How long a count is used (DEFAULT_TOTALS_TTL_MS); tests may change it. */
  totalsTtlMs?: number;
}

/**
 * The merchant's totals: claimed consents (`limits.maxConsents`) and open applications (`limits.maxOpenApplications`),
 * counted in Temporal (src/client/merchant-totals.ts: running workflows of the kind with the merchant's MerchantId),
 * so every API process sees the same figure; each process reads it at most once per `totalsTtlMs` per merchant and
 * total, and adds the starts it made since. What passes is approximate by what other processes start within that
 * time and by visibility's delay (a few starts, not an unbounded number).
 */
export class MerchantTotals {
  private readonly counts = new Map<string, TotalCount>();

  constructor(private readonly deps: MerchantTotalsDeps) {}

  /**
   * Admits one start of the merchant's (a claim, a creation), or throws the 429 when the merchant is at its total.
   * `alreadyHeld` is asked only then: true when the start would create nothing new (the merchant's own consent, an
   * existing reference), which is always let through.
   */
  async admit(
    res: Response,
    scope: MerchantScope,
    total: MerchantTotal,
    alreadyHeld: () => Promise<boolean>,
  ): Promise<Admission> {
    const max = this.max(scope.merchantId, total);
    const count = await this.current(scope, total);
    if (count.counted + count.started + count.pending >= max && !(await alreadyHeld()))
      throw this.refusal(res, scope.merchantId, total, max);
    const entry = this.counts.get(this.keyOf(scope.merchantId, total))!;
    entry.pending += 1;
    let settled = false;
    return {
      settle: (started) => {
        if (settled) return;
        settled = true;
        const now = this.counts.get(this.keyOf(scope.merchantId, total)) ?? entry;
        now.pending = Math.max(0, now.pending - 1);
        if (started) now.started += 1;
      },
    };
  }

  private async current(scope: MerchantScope, total: MerchantTotal): Promise<TotalCount> {
    const key = this.keyOf(scope.merchantId, total);
    let entry = this.counts.get(key);
    if (entry && Date.now() - entry.at < (this.deps.totalsTtlMs ?? DEFAULT_TOTALS_TTL_MS)) return entry;
    if (!entry) {
      entry = { counted: 0, at: 0, pending: 0, started: 0 };
      this.counts.set(key, entry);
    }
    const reading = entry.reading ?? this.read(entry, scope, total);
    entry.reading = reading;
    await reading;
    return entry;
  }

  /** Asks Temporal again; the starts made before the question are in its answer from now on (visibility aside). */
  private async read(entry: TotalCount, scope: MerchantScope, total: MerchantTotal): Promise<void> {
    const startedBefore = entry.started;
    const asked = Date.now();
    try {
      const counted = await countMerchantTotal(this.deps.client, total, scope);
      entry.counted = counted;
      entry.started = Math.max(0, entry.started - startedBefore);
      entry.at = asked;
    } finally {
      entry.reading = undefined;
    }
  }

  private refusal(res: Response, merchant: string, total: MerchantTotal, max: number): ProblemError {
    this.deps.metrics.budgetRefusals.inc({ merchant, budget: total });
    appendRateLimitFields(
      res,
      { name: `merchant-${total.replace('_', '-')}`, quota: max, key: merchant },
      { remaining: 0, resetSeconds: TOTALS_RETRY_AFTER_SECONDS },
    );
    const detail =
      total === 'consents'
        ? `This merchant already holds ${max} claimed consents (maxConsents): release one (DELETE ` +
          '/consents/{consentId}) or retry after Retry-After seconds'
        : `This merchant already has ${max} open applications (maxOpenApplications): retry once some have ended ` +
          '(after Retry-After seconds)';
    return new ProblemError(429, ProblemType.QuotaExceeded, PROBLEM_TITLES[ProblemType.QuotaExceeded], detail, {
      retryAfterSeconds: TOTALS_RETRY_AFTER_SECONDS,
    });
  }

  private max(merchant: string, total: MerchantTotal): number {
    const limits = this.deps.merchants.resolve(merchant).limits;
    return total === 'consents' ? limits.maxConsents : limits.maxOpenApplications;
  }

  private keyOf(merchant: string, total: MerchantTotal): string {
    return `${total} ${merchant}`;
  }
}

/**
 * Every budget of one internal app, built once and shared by the API's routes and the console's, so that both
 * spend the same merchant's budget (src/api/app.ts).
 */
export interface MerchantBudgets {
  requests: RequestHandler;
  creations: RequestHandler;
  refreshes: RequestHandler;
  longPolls: LongPollSlots;
  livePages: LivePageSlots;
  totals: MerchantTotals;
}

export function merchantBudgets(deps: MerchantTotalsDeps): MerchantBudgets {
  return {
    requests: requestBudget(deps),
    creations: creationBudget(deps),
    refreshes: refreshBudget(deps),
    longPolls: new LongPollSlots(deps),
    livePages: new LivePageSlots(deps),
    totals: new MerchantTotals(deps),
  };
}
