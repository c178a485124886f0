import { SNAPSHOT_SCHEMA_VERSIONS } from '../snapshots';
import { withoutWebhookUrl, type CreateApplicationResponse } from '../../shared/bank-wire';
import {
  FINANCE_APPLICATION_DEFAULTS,
  initialFinanceApplicationState,
  UNKNOWN_AT_BANK_GIVE_UP_MS,
  UNKNOWN_AT_BANK_MIN_READS,
  UNKNOWN_AT_BANK_STATUS,
  type FinanceApplicationCarriedState,
  type FinanceApplicationSettings,
  type FinanceApplicationState,
  type StatusChange,
  type StatusSource,
} from '../../shared/finance-application';
import { pollPolicyProblems, type PollPolicy } from '../../shared/poll-policy';
import { withDelivery, type CallbackDelivery } from '../../shared/merchant-callbacks';
import { currentDetails } from './details';
import { WebhookIds, type TakenWebhooks, type Unconfirmed } from './webhook-ids';

/**
 * The decisions of one finance application, as plain code (samples-typescript `safe-message-handlers` style):
 * the workflow registers handlers and runs the loop; this class holds the state, decides what a webhook or a
 * read means, and is the one snapshot continue-as-new carries. No Temporal API here, so it is unit-tested
 * directly (test/workflows/finance-application/state.test.ts); time is always passed in.
 */

export type ResolvedSettings = Required<Omit<FinanceApplicationSettings, 'continueAsNewAfterEvents'>> &
  Pick<FinanceApplicationSettings, 'continueAsNewAfterEvents'>;

/** Settings with defaults filled in, or the problems that make them invalid (each naming its field). */
/**
 * When a read's status was learned: the workflow's time, or the read's own time (`readAt`, the worker's clock) when
 * that is later. Workflow time can lag: a workflow task retried on another worker after its sticky queue timed out
 * has been seen to run with the time of the last completed task, seconds before the read it records. A change is
 * never recorded before the read that found it; `readAt` only ever moves the time later (a skewed worker clock moves
 * it by the skew at most), and results without it (recorded before it existed) keep the workflow's time.
 */
export function learnedAt(workflowNow: number, readAt: string | undefined): Date {
  const read = readAt === undefined ? Number.NaN : Date.parse(readAt);
  return new Date(Number.isFinite(read) && read > workflowNow ? read : workflowNow);
}

export function resolveSettings(s: FinanceApplicationSettings = {}): {
  settings: ResolvedSettings;
  problems: string[];
} {
  const d = FINANCE_APPLICATION_DEFAULTS;
  const settings: ResolvedSettings = {
    fastPollIntervalMs: s.fastPollIntervalMs ?? d.fastPollIntervalMs,
    responsiveWindowMs: s.responsiveWindowMs ?? d.responsiveWindowMs,
    pollBackoffFactor: s.pollBackoffFactor ?? d.pollBackoffFactor,
    slowPollIntervalMs: s.slowPollIntervalMs ?? d.slowPollIntervalMs,
    noWebhookPollIntervalMs: s.noWebhookPollIntervalMs ?? d.noWebhookPollIntervalMs,
    deadlineMs: s.deadlineMs ?? d.deadlineMs,
    terminalStatuses: s.terminalStatuses ?? d.terminalStatuses,
    statusOrder: s.statusOrder ?? d.statusOrder,
    continueAsNewAfterEvents: s.continueAsNewAfterEvents,
  };
  const problems = pollPolicyProblems(pollPolicyOf(settings)).map((p) => `settings: ${p}`);
  if (!(settings.deadlineMs > 0)) problems.push('settings.deadlineMs must be a positive number');
  return { settings, problems };
}

/** The poll policy an application's settings describe. */
export function pollPolicyOf(settings: ResolvedSettings): PollPolicy {
  return {
    fastIntervalMs: settings.fastPollIntervalMs,
    responsiveWindowMs: settings.responsiveWindowMs,
    backoffFactor: settings.pollBackoffFactor,
    maxIntervalMs: settings.slowPollIntervalMs,
    maxIntervalWithoutWebhooksMs: settings.noWebhookPollIntervalMs,
  };
}

export class FinanceApplication {
  readonly state: FinanceApplicationState;
  /** Status changes still to push to the merchant, oldest first (only with a callback URL). */
  readonly unsent: StatusChange[];
  /** Webhooks not yet acted on, and the bounded bookkeeping of other financeApplicationIds. */
  private readonly webhooks: WebhookIds;
  /** Duplicate applications still to report to the merchant (only with a callback URL). */
  readonly unsentDuplicates: string[];

  constructor(
    readonly merchantReference: string,
    readonly settings: ResolvedSettings,
    options: { now: number; carried?: FinanceApplicationCarriedState; notifies: boolean },
  ) {
    this.notifies = options.notifies;
    const carried = options.carried;
    // Runs from before withoutWebhookUrl carry the bank's echo of our webhookUrl: dropped here.
    this.state = carried
      ? {
          ...carried.state,
          ...(carried.state.bank ? { bank: withoutWebhookUrl(carried.state.bank) } : {}),
          runs: carried.state.runs + 1,
        }
      : initialFinanceApplicationState(merchantReference, new Date(options.now + settings.deadlineMs).toISOString());
    this.webhooks = new WebhookIds(this.state, carried);
    this.unsent = [...(carried?.unsentNotifications ?? [])];
    this.unsentDuplicates = [...(carried?.unsentDuplicateReports ?? [])];
  }

  private readonly notifies: boolean;
  /** What the callback being sent now is about (merchant-notification.ts); for the details, never carried. */
  sendingCallback: string | undefined;

  // --- Webhooks (signal handler side, then the loop): src/workflows/finance-application/webhook-ids.ts bounds what they leave behind.

  /** The signal handler: only records (`at`: workflow time, for the webhook-to-recorded delay). */
  receiveWebhook(financeApplicationId: string, at?: number): void {
    this.webhooks.receive(financeApplicationId, at);
  }

  hasWebhooks(): boolean {
    return this.webhooks.has();
  }

  /**
   * Every webhook received so far, answered by one read (a burst coalesces). Returns how many were this
   * application's; the others (another financeApplicationId) are counted as mismatched.
   */
  takeWebhooks(): TakenWebhooks {
    return this.webhooks.take();
  }

  /**
   * Other financeApplicationIds to confirm with a status read of each, now (a few at most: src/workflows/finance-application/webhook-ids.ts).
   * Each then ends with otherIdFound, otherIdNotFound or otherIdReadFailed.
   */
  otherIdsToConfirm(): string[] {
    return this.webhooks.takeCandidates();
  }

  /**
   * The bank confirmed another application for this reference (an ambiguous create, retried). Returns true when it
   * is recorded: a new duplicate, queued for the merchant when callbacks are on; at most OTHER_ID_LIMITS.maxDuplicates.
   */
  otherIdFound(id: string): boolean {
    if (!this.webhooks.confirmed(id)) return false;
    if (this.notifies) this.unsentDuplicates.push(id);
    return true;
  }

  /** The bank answered 404 for another id: counted as invented, never reported. */
  otherIdNotFound(id: string): void {
    this.webhooks.notFound(id);
  }

  /** The confirmation read failed: the id's webhooks count as unchecked (a real duplicate's next webhook tries again). */
  otherIdReadFailed(id: string): void {
    this.webhooks.readFailed(id);
  }

  /** Webhooks naming an unconfirmed id since the last call (the metric), and whether the run has not logged them yet. */
  takeUnconfirmed(): Unconfirmed | undefined {
    return this.webhooks.takeUnconfirmed();
  }

  // --- Bank answers.

  /** The create response: the application exists. Returns the first status change, if the response had one. */
  created(response: CreateApplicationResponse, at: Date): StatusChange | undefined {
    // The activity strips it already; a history recorded before it did still holds it.
    this.state.bank = withoutWebhookUrl(response);
    this.state.financeApplicationId = response.financeApplicationId;
    this.webhooks.ourIdKnown();
    this.state.quietSince = at.toISOString();
    return typeof response.status === 'string' ? this.record(response.status, 'create', at) : undefined;
  }

  /** A status read (made by a webhook or a poll), counted. */
  read(status: string, source: StatusSource, at: Date, webhooksKnown?: boolean): StatusChange | undefined {
    this.state.statusReads += 1;
    if (webhooksKnown !== undefined) this.state.webhooksKnown = webhooksKnown || this.state.webhooksLive;
    return this.record(status, source, at);
  }

  /** A read that failed after its retries (never fatal: the next poll or webhook reads again). */
  readFailed(): void {
    this.state.statusReads += 1;
    this.state.failedReads += 1;
  }

  /**
   * The bank answered 404 on the status of our application (after creating it): counted as a failed read. Returns
   * true the first time of a run of 404s (the workflow reports the anomaly once).
   */
  unknownAtBank(at: number): boolean {
    this.readFailed();
    const iso = new Date(at).toISOString();
    const current = this.state.unknownAtBank;
    if (current) {
      current.reads += 1;
      current.lastAt = iso;
      return false;
    }
    this.state.unknownAtBank = { since: iso, lastAt: iso, reads: 1 };
    return true;
  }

  /** The bank reported a status again after 404s: the anomaly is over. Returns whether there was one. */
  knownAgain(): boolean {
    if (!this.state.unknownAtBank) return false;
    delete this.state.unknownAtBank;
    return true;
  }

  /** Nothing but 404s for UNKNOWN_AT_BANK_GIVE_UP_MS and at least UNKNOWN_AT_BANK_MIN_READS reads: stop following it. */
  givesUpOnUnknown(now: number): boolean {
    const u = this.state.unknownAtBank;
    return !!u && u.reads >= UNKNOWN_AT_BANK_MIN_READS && now - Date.parse(u.since) >= UNKNOWN_AT_BANK_GIVE_UP_MS;
  }

  /** The FinanceApplicationStatus search attribute: the bank's status, or UNKNOWN_AT_BANK during the anomaly. */
  searchStatus(): string {
    return this.state.unknownAtBank ? UNKNOWN_AT_BANK_STATUS : (this.state.status ?? 'UNKNOWN');
  }

  /** Records `status` once, if it moves forward; a stale or repeated status changes nothing. */
  record(status: string, source: StatusSource, at: Date): StatusChange | undefined {
    if (!this.advances(status)) return undefined;
    const change: StatusChange = { status, at: at.toISOString(), source };
    this.state.history.push(change);
    this.state.status = status;
    this.state.quietSince = change.at;
    if (this.notifies) this.unsent.push(change);
    return change;
  }

  advances(next: string): boolean {
    const current = this.state.status;
    if (current === undefined) return true;
    if (next === current) return false;
    const from = this.settings.statusOrder[current];
    const to = this.settings.statusOrder[next];
    if (from !== undefined && to !== undefined) return to > from;
    // A status outside the order: taken once, never again after something else (that would be going back).
    return !this.state.history.some((h) => h.status === next);
  }

  // --- Where the loop stands.

  isTerminal(): boolean {
    return this.state.status !== undefined && this.settings.terminalStatuses.includes(this.state.status);
  }

  deadline(): number {
    return Date.parse(this.state.deadlineAt);
  }

  /**
   * Why following the application ends now, or undefined to go on: a terminal status first, then the deadline
   * (`deadlinePassed`: its timer fired), then a day of nothing but 404s (givesUpOnUnknown).
   */
  endsNow(now: number, deadlinePassed = false): 'terminal' | 'deadline' | 'unknown_at_bank' | undefined {
    if (this.isTerminal()) return 'terminal';
    if (deadlinePassed || now >= this.deadline()) return 'deadline';
    if (this.givesUpOnUnknown(now)) return 'unknown_at_bank';
    return undefined;
  }

  finish(outcome: NonNullable<FinanceApplicationState['outcome']>): void {
    this.state.done = true;
    this.state.outcome = outcome;
  }

  /** What the polling activity needs: statuses that count as "unchanged", the policy's clock and inputs. */
  pollInput(now: number): {
    seenStatuses: string[];
    quietSince: string;
    webhooksLive: boolean;
    policy: PollPolicy;
  } {
    return {
      seenStatuses: [...new Set(this.state.history.map((h) => h.status))],
      quietSince: this.state.quietSince ?? this.state.history.at(-1)?.at ?? new Date(now).toISOString(),
      webhooksLive: this.state.webhooksLive,
      policy: pollPolicyOf(this.settings),
    };
  }

  // --- Merchant callbacks.

  nextNotification(): StatusChange | undefined {
    return this.unsent[0];
  }

  /** The next duplicate application to report to the merchant (after the status changes queued before it). */
  nextDuplicateReport(): string | undefined {
    return this.unsentDuplicates[0];
  }

  duplicateReportDone(delivered: boolean, delivery?: CallbackDelivery): void {
    this.unsentDuplicates.shift();
    this.delivered(delivered, delivery);
  }

  notificationDone(delivered: boolean, delivery?: CallbackDelivery): void {
    this.unsent.shift();
    this.delivered(delivered, delivery);
  }

  /** Counts the outcome and keeps its record (bounded) for the console's timeline. */
  private delivered(delivered: boolean, delivery: CallbackDelivery | undefined): void {
    if (delivered) this.state.notificationsSent += 1;
    else this.state.notificationsFailed += 1;
    if (delivery) this.state.callbackDeliveries = withDelivery(this.state.callbackDeliveries, delivery);
  }

  // --- Continue-as-new and the Web UI.

  /** The one snapshot continue-as-new carries to the next run. */
  snapshot(): FinanceApplicationCarriedState {
    return {
      schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.financeApplication,
      state: this.state,
      unsentNotifications: [...this.unsent],
      ...this.webhooks.snapshot(),
      ...(this.unsentDuplicates.length > 0 ? { unsentDuplicateReports: [...this.unsentDuplicates] } : {}),
    };
  }

  /**
   * Current details in the Web UI (details.ts): where the application stands, how its status was learned, the next
   * poll, the callbacks and the status timeline. `now`: workflow time.
   */
  details(now: number): string {
    return currentDetails({
      state: this.state,
      policy: pollPolicyOf(this.settings),
      now,
      ...(this.notifies
        ? {
            callbacks: {
              ...(this.sendingCallback !== undefined ? { sending: this.sendingCallback } : {}),
              queued: this.unsent.length + this.unsentDuplicates.length - (this.sendingCallback !== undefined ? 1 : 0),
            },
          }
        : {}),
    });
  }
}
