import type { ApplicationStatusResponse, CreateApplicationResponse } from '../shared/bank-wire';
import type { PollPolicy } from '../shared/poll-policy';
import type { CallbackUrlVerdict } from '../security/callback-url';
import type { BANK_READ_ACTIVITIES } from '../shared/task-queues';
import type { UndeliveredPage, UndeliveredPageRequest } from '../shared/undelivered-callbacks';

/** A status read, with what the worker knows of webhook delivery (any application's, not only this one's). */
export type StatusRead = ApplicationStatusResponse & {
  /** True when webhooks are known to reach us: this application's own, or another's recently (worker-wide). */
  webhooksKnown: boolean;
  /**
   * When this read got the bank's answer, by the worker's clock (ISO). The workflow records a change no earlier than
   * this: its own clock can lag after a worker failover (learnedAt in src/workflows/finance-application/state.ts).
   * Absent in results recorded before it existed.
   */
  readAt?: string;
};

/**
 * The activities the workflows call. createActivities(deps) (src/activities/index.ts) returns an object of
 * this shape; workflows use `proxyActivities<Activities>` with `import type` only.
 * Every activity takes one object parameter of plain data.
 */
export interface Activities {
  /** POST /applications with the hashed webhookUrl built from the merchant reference. */
  createApplication(input: {
    /** The owning merchant: its webhookUrl names it. */
    merchantId: string;
    merchantReference: string;
    /** The merchant's create request: redirectUrl and any other fields, passed on to the bank. */
    application: Record<string, unknown>;
  }): Promise<CreateApplicationResponse>;

  /**
   * GET /applications/{financeApplicationId}/status, once. `source: 'webhook'` says a webhook of this
   * application triggered the read: proof, for every application on this worker, that webhooks reach us.
   */
  getApplicationStatus(input: {
    financeApplicationId: string;
    merchantReference: string;
    source?: 'webhook' | 'poll';
    /**
     * The read confirms another id seen on this application's webhook URL as a duplicate of its reference: refused
     * (NOT_THIS_REFERENCES) before the bank is asked when another workflow of ours records that id as its own.
     */
    confirmsDuplicate?: boolean;
  }): Promise<StatusRead>;

  /**
   * The fallback poll, as one activity whose retries are the polls (samples-typescript `polling/infrequent`):
   * each attempt reads the status and fails with the benign `StatusUnchanged` and a `nextRetryDelay` from the
   * poll policy while the status is one of `seenStatuses`; it returns the first new status. Temporal schedules
   * the attempts, so a quiet application costs no workflow task and no history event between polls. The
   * first attempt only schedules the first read.
   */
  pollApplicationStatus(input: {
    financeApplicationId: string;
    merchantReference: string;
    /** Statuses already recorded: a read of one of them is "unchanged" (a stale read included). */
    seenStatuses: string[];
    /** ISO time of the creation or of the last status change: the policy's clock. */
    quietSince: string;
    /** This application's own webhooks have arrived. */
    webhooksLive: boolean;
    policy: PollPolicy;
  }): Promise<StatusRead>;

  /** PUT /refresh for one consent. */
  startRefresh(input: { consentId: string }): Promise<{ taskId: string }>;

  /**
   * The worker's verdict on a merchant callback URL (CALLBACK_ALLOWED_ORIGINS lives in the worker's environment,
   * never in workflow code). Run as a local activity before anything reaches the bank; never throws for a refusal.
   */
  checkCallbackUrl(input: {
    url: string;
    /** Whose allow-list applies. */
    merchantId: string;
  }): Promise<CallbackUrlVerdict>;

  /**
   * The worker's clock, for a workflow decision that must measure real lateness (a timer that fired during an
   * outage). Run as a local activity: its result is recorded in the history, so a replay reads the same value.
   */
  readClock(input: Record<string, never>): Promise<{ nowMs: number }>;

  /**
   * POST a JSON event, signed (Standard Webhooks), to a merchant callback URL; retried on 5xx/network, not on 4xx
   * nor on a URL outside the allow-list (MerchantCallbackNotAllowed).
   */
  notifyMerchant(input: {
    /** Whose signing secrets and allow-list apply. */
    merchantId: string;
    url: string;
    /** Sent as `webhook-id` (and Idempotency-Key) so the merchant can drop redeliveries; stable across retries. */
    idempotencyKey: string;
    event: Record<string, unknown>;
  }): Promise<{
    delivered: boolean;
    status?: number;
    /** The attempt that delivered (1 = first): the workflow records it (src/shared/merchant-callbacks.ts). */
    attempt?: number;
  }>;

  /**
   * A page of the merchant's undelivered callbacks, from its ledger workflow (one query): the bulk resend reads the
   * given-up ones of its range through it (workflows cannot query).
   */
  readUndeliveredCallbacks(input: { merchantId: string; request: UndeliveredPageRequest }): Promise<UndeliveredPage>;
}

/** Fails to compile when the bank-reads queue's list (src/shared/task-queues.ts) names something not an activity. */
type AssertBankReads<T extends keyof Activities> = T;
export type BankReadActivities = AssertBankReads<(typeof BANK_READ_ACTIVITIES)[number]>;
