/**
 * The finance-application workflow's public shape: its messages (update, signal, query), input, state and
 * defaults. Defined once here and used by the workflow, the merchant client and the webhook receiver.
 * Types and constants only (plus @temporalio/workflow's define* helpers), so both sides may import it.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { DEFAULT_POLL_POLICY } from './poll-policy';
import type { CallbackDelivery } from './merchant-callbacks';
import {
  FINANCE_APPLICATION_STATUS_ORDER,
  TERMINAL_FINANCE_APPLICATION_STATUSES,
  type CreateApplicationResponse,
} from './bank-wire';

/** The workflow type name: the merchant client starts it by this name (the workflow's function name). */
export const financeApplicationWorkflowType = 'financeApplicationWorkflow';

/** How the workflow learned a status: the create response, a read after a webhook, or a fallback poll. */
export type StatusSource = 'create' | 'webhook' | 'poll';

/** One recorded status change (contract: GET /applications/:ref `history` items). */
export interface StatusChange {
  status: string;
  /** ISO time the workflow learned it. */
  at: string;
  source: StatusSource;
}

/**
 * Tunables of one application's lifecycle. Every field is optional; see FINANCE_APPLICATION_DEFAULTS and the
 * poll policy in src/shared/poll-policy.ts.
 */
export interface FinanceApplicationSettings {
  /** Poll interval during the responsive window after creation and after each status change (ms). */
  fastPollIntervalMs?: number;
  /** How long polling stays at the fast interval after creation or a status change (ms). */
  responsiveWindowMs?: number;
  /** After the responsive window, each poll interval is this factor times the one before (≥ 1). */
  pollBackoffFactor?: number;
  /** Longest poll interval once webhooks are known to reach us: the safety net for a lost webhook (ms). */
  slowPollIntervalMs?: number;
  /** Longest poll interval while no webhook has ever been seen (ms; never above slowPollIntervalMs). */
  noWebhookPollIntervalMs?: number;
  /** Stop following the application this long after the workflow first started (ms). */
  deadlineMs?: number;
  /** Statuses that end the workflow. */
  terminalStatuses?: string[];
  /** Rank of each status: a read with a lower rank than the current status is stale and ignored. */
  statusOrder?: Record<string, number>;
  /**
   * Continue-as-new once the run's history has this many events, on top of the server's
   * `continueAsNewSuggested` (tests use a small number to force it).
   */
  continueAsNewAfterEvents?: number;
}

/**
 * Defaults: poll every 30 s for 5 minutes after creation or a change, then back off ×2 up to every 5 minutes
 * (15 once webhooks are known to reach us); give up after 30 days.
 */
export const FINANCE_APPLICATION_DEFAULTS: Readonly<
  Required<Omit<FinanceApplicationSettings, 'continueAsNewAfterEvents'>>
> = {
  fastPollIntervalMs: DEFAULT_POLL_POLICY.fastIntervalMs,
  responsiveWindowMs: DEFAULT_POLL_POLICY.responsiveWindowMs,
  pollBackoffFactor: DEFAULT_POLL_POLICY.backoffFactor,
  slowPollIntervalMs: DEFAULT_POLL_POLICY.maxIntervalMs,
  noWebhookPollIntervalMs: DEFAULT_POLL_POLICY.maxIntervalWithoutWebhooksMs,
  deadlineMs: 30 * 24 * 60 * 60_000,
  // The bank's status set is not shown: the sandbox's set (src/shared/bank-wire.ts).
  terminalStatuses: [...TERMINAL_FINANCE_APPLICATION_STATUSES],
  statusOrder: { ...FINANCE_APPLICATION_STATUS_ORDER },
};

/** State carried from one run to the next on continue-as-new (not for callers to set). */
export interface FinanceApplicationCarriedState {
  /** The snapshot's schema (src/workflows/snapshots.ts); absent: version 1, from before Worker Versioning. */
  schemaVersion?: number;
  state: FinanceApplicationState;
  /** Status changes not yet pushed to the merchant's callbackUrl. */
  unsentNotifications: StatusChange[];
  /**
   * financeApplicationIds of webhooks received but not yet acted on: each id once, at most a few (runs from before
   * the bounds carried one per webhook; the next run takes them through the same bounded intake).
   */
  pendingWebhookIds: string[];
  /** Other financeApplicationIds the bank answered 404 for (at most one per confirmation read). */
  notFoundIds?: string[];
  /** Duplicate applications found but not yet reported to the merchant's callback. */
  unsentDuplicateReports?: string[];
}

export interface FinanceApplicationInput {
  /** The merchant that owns the application (its tenant id, the name of its API key). */
  merchantId: string;
  merchantReference: string;
  /** The bank's create request without webhookUrl (the activity adds the hashed one): redirectUrl and more. */
  application: Record<string, unknown>;
  /**
   * Optional merchant URL that receives a signed POST for each status change (Standard Webhooks headers); its
   * origin must be in the merchant's allow-list on the worker (MERCHANTS_FILE callbackAllowedOrigins, else
   * CALLBACK_ALLOWED_ORIGINS), checked before the bank is called.
   */
  callbackUrl?: string;
  settings?: FinanceApplicationSettings;
  /** Id of the request that started the workflow: the update with the same id reports `created: true`. */
  startRequestId?: string;
  /** Set by the workflow itself when it continues as new. */
  carried?: FinanceApplicationCarriedState;
}

/** The workflow's state; the query's and the result's view of it. */
export interface FinanceApplicationState {
  merchantReference: string;
  financeApplicationId?: string;
  /** The bank's create response. */
  bank?: CreateApplicationResponse;
  /** Latest recorded status. */
  status?: string;
  /** Every recorded status, oldest first, each once. */
  history: StatusChange[];
  /** True once the workflow stopped following the application. */
  done: boolean;
  /** Why it stopped: a terminal status, the deadline, or the bank no longer knowing the application. */
  outcome?: 'terminal' | 'deadline' | 'unknown_at_bank';
  /**
   * Set while the bank answers 404 on the status read of this application (an anomaly: the bank lost it, or a
   * sandbox restarted without its memory). FinanceApplicationStatus then reads UNKNOWN_AT_BANK; cleared when the bank
   * reports a status again. Absent in runs from before this check.
   */
  unknownAtBank?: { since: string; lastAt: string; reads: number };
  /** A webhook for this application arrived: polling has slowed down. */
  webhooksLive: boolean;
  /**
   * The worker last said webhooks reach us (this application's or another's): polling backs off to the slow
   * interval. Absent in runs from before the poll policy.
   */
  webhooksKnown?: boolean;
  /** ISO time of the creation or the last status change: the poll policy's clock. */
  quietSince?: string;
  /** Status-changed signals received (all of them, across runs). */
  webhooksReceived: number;
  /** Signals whose financeApplicationId is not this workflow's application: recorded and ignored. */
  mismatchedWebhooks: number;
  /**
   * Other applications the bank holds for this reference, seen through their webhooks (a create the bank acted
   * on whose answer was lost, then retried) and confirmed by a status read of their id: reported to operators and to
   * the merchant, never followed. At most 3 (src/workflows/finance-application/webhook-ids.ts).
   */
  duplicateApplicationIds?: string[];
  /**
   * Webhooks naming another financeApplicationId that the bank did not confirm: `reads` confirmation reads made (at
   * most 10 over the application's life), `notFound` webhooks naming an id the bank answered 404 for, `unchecked`
   * webhooks beyond the bounds (or whose read failed). Never reported to the merchant. Absent until the first one.
   */
  otherIds?: { reads: number; notFound: number; unchecked: number };
  /** Status reads made (webhook-triggered and polls). */
  statusReads: number;
  /** Status reads that failed after the activity's retries (the next poll tries again). */
  failedReads: number;
  /** Merchant callbacks delivered / given up. */
  notificationsSent: number;
  notificationsFailed: number;
  /**
   * The merchant callbacks' outcomes, oldest first, the newest MAX_CALLBACK_DELIVERIES_KEPT (src/shared/merchant-callbacks.ts):
   * for the console's timeline and its resend. Absent in runs from before it, and until the first outcome.
   */
  callbackDeliveries?: CallbackDelivery[];
  /** ISO time after which the workflow stops following the application. */
  deadlineAt: string;
  /** Runs of this workflow so far (1 + continue-as-new count). */
  runs: number;
}

/** The state of an application nothing has been learned of yet: a new run's, or one that failed before the create. */
export function initialFinanceApplicationState(
  merchantReference: string,
  deadlineAt: string,
  done = false,
): FinanceApplicationState {
  return {
    merchantReference,
    history: [],
    done,
    webhooksLive: false,
    webhooksReceived: 0,
    mismatchedWebhooks: 0,
    statusReads: 0,
    failedReads: 0,
    notificationsSent: 0,
    notificationsFailed: 0,
    deadlineAt,
    runs: 1,
  };
}

/** Result of the start update (contract: the body of POST /applications, plus `created`). */
export interface FinanceApplicationStarted {
  merchantReference: string;
  workflowId: string;
  financeApplicationId: string;
  /** The bank's create response. */
  bank: CreateApplicationResponse;
  /** True when this request started the workflow (and so created the application at the bank). */
  created: boolean;
}

/**
 * Update sent with update-with-start: resolves with the bank's create response as soon as the application
 * exists; fails with the creation's failure type when the bank refused it.
 */
export const startFinanceApplicationUpdate = defineUpdate<FinanceApplicationStarted, [{ requestId: string }]>(
  'startFinanceApplication',
);

/** One signal per finance-application webhook (sent by the receiver). */
export const financeApplicationStatusChangedSignal = defineSignal<[{ financeApplicationId: string }]>(
  'financeApplicationStatusChanged',
);

/** Current status, history and counters. */
export const financeApplicationStateQuery = defineQuery<FinanceApplicationState>('financeApplicationState');

/**
 * The FinanceApplicationStatus search attribute (not one of the bank's statuses) while the bank answers 404 on the
 * status of an application it created. Polling slows to the safety net (slowPollIntervalMs between polls); after
 * UNKNOWN_AT_BANK_GIVE_UP_MS of nothing but 404s, and at least UNKNOWN_AT_BANK_MIN_READS of them, the workflow ends
 * with outcome `unknown_at_bank` rather than polling a bank that forgot it until the deadline.
 */
export const UNKNOWN_AT_BANK_STATUS = 'UNKNOWN_AT_BANK';
export const UNKNOWN_AT_BANK_GIVE_UP_MS = 24 * 60 * 60_000;
export const UNKNOWN_AT_BANK_MIN_READS = 3;

/** What a status wait asks: answer once the status differs from `fromStatus`, or after `timeoutMs`. */
export interface StatusWaitRequest {
  fromStatus: string;
  timeoutMs: number;
}

/**
 * Why a status wait ended: `changed` (the status differs from fromStatus), `done` (the workflow stopped following
 * the application with the status unchanged), `timeout`, or `closing` (the run is continuing as new or ending:
 * ask the next run, or read the result).
 */
export type StatusWaitOutcome = 'changed' | 'done' | 'timeout' | 'closing';

export interface StatusWaitResult {
  outcome: StatusWaitOutcome;
  state: FinanceApplicationState;
}

/**
 * Bounds of status waits (each update and its timer are recorded in the run's history, docs/merchant-api.md
 * "Search and waiting for a change"): a wait lasts at most `maxTimeoutMs`, and a run holds at most `maxWaitsPerRun`
 * waits at once (the validator rejects more, with nothing recorded). API processes share one wait per application and from-status.
 * The server itself holds at most 10 updates in flight per workflow (`history.maxInFlightUpdates`) and makes the
 * 11th wait; waits take at most half of that, so the start update of a repeated POST /applications always has room.
 */
export const STATUS_WAIT_LIMITS = { maxTimeoutMs: 60_000, maxWaitsPerRun: 5, maxStatusLength: 64 } as const;

/**
 * Answers when the application's status differs from `fromStatus` (at once if it already does), when the
 * workflow is done, or after `timeoutMs`: a wait served by the workflow itself (a condition), no reads.
 */
export const waitForStatusChangeUpdate = defineUpdate<StatusWaitResult, [StatusWaitRequest]>('waitForStatusChange');

/** `ApplicationFailure.type` values the workflow and its update throw (defined with every other in failure-types.ts). */
export { FinanceApplicationFailureType } from './failure-types';
