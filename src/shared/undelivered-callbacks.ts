import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * Merchant callbacks not delivered, per merchant (docs/decisions/0049-undelivered-callbacks-ledger.md): the retry
 * window's decision, the merchant's ledger workflow's messages and its pure state, and the bulk resend's contract.
 * Plain data and pure rules: used by the activity, the workflows, the client and the API.
 */

/** The default retry window of a merchant's callbacks (CALLBACK_RETRY_WINDOW, MERCHANTS_FILE callbackRetryWindow). */
export const DEFAULT_CALLBACK_RETRY_WINDOW_MS = 3 * 24 * 3_600_000;
/** The bounds of a retry window; the activity's schedule-to-close (src/workflows/activity-options.ts) is the max. */
export const CALLBACK_RETRY_WINDOW_BOUNDS = { min: 1_000, max: 7 * 24 * 3_600_000 };

/** The backoff of a callback's retries: MERCHANT_CALLBACK_ACTIVITY_OPTIONS' retry policy, as the activity applies it. */
export const CALLBACK_BACKOFF = { initialMs: 5_000, coefficient: 2, maxMs: 600_000 };

/**
 * After a retryable failure of attempt `attempt`: give up when the window (from the callback's first scheduling)
 * has passed, else retry after the backoff's delay (or the merchant's Retry-After), cut so the last attempt falls at
 * the window's end.
 */
export function callbackRetry(input: {
  attempt: number;
  firstScheduledMs: number;
  nowMs: number;
  windowMs: number;
  requestedDelayMs?: number;
}): { giveUp: true } | { giveUp: false; nextRetryDelayMs: number } {
  const remaining = input.firstScheduledMs + input.windowMs - input.nowMs;
  if (remaining <= 0) return { giveUp: true };
  const backoff = Math.min(
    CALLBACK_BACKOFF.initialMs * CALLBACK_BACKOFF.coefficient ** Math.max(0, input.attempt - 1),
    CALLBACK_BACKOFF.maxMs,
  );
  return { giveUp: false, nextRetryDelayMs: Math.max(1, Math.min(input.requestedDelayMs ?? backoff, remaining)) };
}

/** Where an undelivered callback stands: its own retries go on, or they ended (the window passed). */
export type UndeliveredState = 'retrying' | 'given-up';
export const UNDELIVERED_STATES = ['retrying', 'given-up'] as const;

/** What the notifyMerchant activity tells its merchant's ledger. */
export interface CallbackReport {
  idempotencyKey: string;
  /** `retrying`: its first attempt failed; `given-up`: the window passed; `delivered`: taken after all. */
  outcome: UndeliveredState | 'delivered';
  /** ISO time of the report (the worker's clock). */
  at: string;
  /** The event's `type` (finance-application.status-changed, …). */
  type?: string;
  /** Where and what was sent: a resend posts the same, with the same key. */
  url?: string;
  event?: Record<string, unknown>;
  /** ISO time the callback was first scheduled. */
  firstAttemptAt?: string;
  attempts?: number;
  httpStatus?: number;
  message?: string;
  /** The workflow that sent it (an application's, a consent's). */
  workflowId?: string;
}

/** One callback not delivered, as the ledger keeps it. */
export interface UndeliveredCallback {
  idempotencyKey: string;
  type: string;
  state: UndeliveredState;
  /** ISO: first scheduled; the list's time filter and order. */
  firstAttemptAt: string;
  /** ISO: the last report (the first failure, or the give-up). */
  updatedAt: string;
  attempts?: number;
  httpStatus?: number;
  message?: string;
  workflowId?: string;
  url: string;
  event: Record<string, unknown>;
}

export interface UndeliveredFilter {
  /** ISO: first scheduled at or after. */
  since?: string;
  /** ISO: first scheduled before. */
  until?: string;
  type?: string;
  state?: UndeliveredState;
}

export interface UndeliveredPageRequest extends UndeliveredFilter {
  /** The previous page's `next`: entries after it in (firstAttemptAt, idempotencyKey) order. */
  after?: string;
  limit: number;
}

export interface UndeliveredPage {
  callbacks: UndeliveredCallback[];
  /** Pass as `after` for the next page; undefined when this is the last. */
  next?: string;
  /** Entries the ledger dropped (the oldest, beyond MAX_UNDELIVERED_KEPT) since it started. */
  dropped: number;
}

/** The most a merchant's ledger keeps: its state (and a continue-as-new snapshot) stays bounded. */
export const MAX_UNDELIVERED_KEPT = 2_000;

/** The ledger's carried state (continue-as-new). */
export interface CallbackLedgerSnapshot {
  entries: UndeliveredCallback[];
  dropped: number;
}

const cursorOf = (e: Pick<UndeliveredCallback, 'firstAttemptAt' | 'idempotencyKey'>) =>
  `${e.firstAttemptAt}|${e.idempotencyKey}`;

/**
 * A merchant's undelivered callbacks, keyed by idempotency key: a report adds, updates or (delivered) removes one.
 * No clock, no I/O: the ledger workflow holds one.
 */
export class CallbackLedger {
  private readonly entries = new Map<string, UndeliveredCallback>();
  private droppedCount: number;

  constructor(snapshot?: CallbackLedgerSnapshot) {
    for (const e of snapshot?.entries ?? []) this.entries.set(e.idempotencyKey, e);
    this.droppedCount = snapshot?.dropped ?? 0;
  }

  get size(): number {
    return this.entries.size;
  }

  record(report: CallbackReport): void {
    const known = this.entries.get(report.idempotencyKey);
    if (report.outcome === 'delivered') {
      this.entries.delete(report.idempotencyKey);
      return;
    }
    // A late `retrying` never undoes a give-up (reports of one callback may arrive out of order).
    if (known?.state === 'given-up' && report.outcome === 'retrying') return;
    const url = report.url ?? known?.url;
    const event = report.event ?? known?.event;
    if (url === undefined || event === undefined) return;
    const entry: UndeliveredCallback = {
      idempotencyKey: report.idempotencyKey,
      type: report.type ?? known?.type ?? (typeof event.type === 'string' ? event.type : 'unknown'),
      state: report.outcome,
      firstAttemptAt: known?.firstAttemptAt ?? report.firstAttemptAt ?? report.at,
      updatedAt: report.at,
      ...optional('attempts', report.attempts ?? known?.attempts),
      ...optional('httpStatus', report.httpStatus ?? known?.httpStatus),
      ...optional('message', (report.message ?? known?.message)?.slice(0, 300)),
      ...optional('workflowId', report.workflowId ?? known?.workflowId),
      url,
      event,
    };
    this.entries.delete(entry.idempotencyKey);
    this.entries.set(entry.idempotencyKey, entry);
    while (this.entries.size > MAX_UNDELIVERED_KEPT) {
      const oldest = this.sorted()[0]!;
      this.entries.delete(oldest.idempotencyKey);
      this.droppedCount++;
    }
  }

  page(request: UndeliveredPageRequest): UndeliveredPage {
    const matching = this.sorted().filter(
      (e) =>
        (request.since === undefined || e.firstAttemptAt >= request.since) &&
        (request.until === undefined || e.firstAttemptAt < request.until) &&
        (request.type === undefined || e.type === request.type) &&
        (request.state === undefined || e.state === request.state) &&
        (request.after === undefined || cursorOf(e) > request.after),
    );
    const callbacks = matching.slice(0, request.limit);
    const more = matching.length > callbacks.length;
    return { callbacks, ...(more ? { next: cursorOf(callbacks.at(-1)!) } : {}), dropped: this.droppedCount };
  }

  snapshot(): CallbackLedgerSnapshot {
    return { entries: this.sorted(), dropped: this.droppedCount };
  }

  private sorted(): UndeliveredCallback[] {
    return [...this.entries.values()].sort((a, b) => (cursorOf(a) < cursorOf(b) ? -1 : 1));
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

/** The ledger workflow of a merchant: started by the first report (signal-with-start), one per merchant. */
export const callbackLedgerWorkflowType = 'callbackLedgerWorkflow';
export const callbackLedgerWorkflowId = (merchantId: string): string => `callback-ledger:${merchantId}`;
export const callbackReportSignal = defineSignal<[CallbackReport]>('callbackReport');
export const undeliveredCallbacksQuery = defineQuery<UndeliveredPage, [UndeliveredPageRequest]>('undeliveredCallbacks');

export interface CallbackLedgerInput {
  merchantId: string;
  carried?: CallbackLedgerSnapshot;
}

/** The bulk resend: the merchant's given-up callbacks first scheduled in [since, until), sent again, paced. */
export const callbackBulkResendWorkflowType = 'callbackBulkResendWorkflow';

/** One per merchant and range (and type): the same request joins the running one, or runs again once it ended. */
export const callbackBulkResendWorkflowId = (merchantId: string, range: BulkResendRange): string =>
  `callback-resend:${merchantId}:${range.since}:${range.until}${range.type ? `:${range.type}` : ''}`;

export interface BulkResendRange {
  /** ISO, inclusive. */
  since: string;
  /** ISO, exclusive. */
  until: string;
  type?: string;
}

export interface BulkResendInput extends BulkResendRange {
  merchantId: string;
  /** The merchant's pace (MERCHANTS_FILE callbackResendsPerMinute, else MERCHANT_CALLBACK_RESENDS_PER_MINUTE). */
  perMinute: number;
}

/** The bulk resend's progress (its query, and its result). */
export interface BulkResendProgress {
  merchantId: string;
  since: string;
  until: string;
  type?: string;
  /** Given-up callbacks found in the range so far. */
  found: number;
  delivered: number;
  failed: number;
  /** Still retrying on their own: not sent (their own retries deliver them once the endpoint answers). */
  skippedRetrying: number;
  done: boolean;
  /** The keys that failed again, at most 50. */
  failures: { idempotencyKey: string; message: string }[];
}

export const bulkResendProgressQuery = defineQuery<BulkResendProgress>('bulkResendProgress');

/** The workflow types whose notifyMerchant sends a callback again: their deliveries clear the ledger's entry. */
export const RESEND_WORKFLOW_TYPES: readonly string[] = ['callbackRedeliveryWorkflow', callbackBulkResendWorkflowType];
