import type { FinanceApplicationState } from '../../shared/finance-application';

/**
 * The financeApplicationIds of one application's status webhooks, as plain, bounded state (unit-tested in
 * test/workflows/finance-application/webhook-ids.test.ts). A webhook naming our own id asks for a read. One naming another id may be a
 * second application the bank created for our reference (an ambiguous create, retried): a duplicate worth reporting.
 * But anyone holding the webhook URL can post any id, so another id is believed only when the bank confirms it (a
 * status read of that id answers), and nothing here grows with what arrives:
 * - at most OTHER_ID_LIMITS.maxDuplicates confirmed duplicates per application, and never more ids waiting for or
 *   in a confirmation read than there is room for;
 * - at most OTHER_ID_LIMITS.maxConfirmationReads confirmation reads per application over its life (carried across
 *   continue-as-new), so a flood cannot spend the bank read budget either;
 * - every other webhook is only counted (`otherIds` in the state, the metric), never kept by id.
 */
export const OTHER_ID_LIMITS = {
  /** Confirmed duplicate applications kept (search attribute, details, merchant callback) per application. */
  maxDuplicates: 3,
  /** Status reads of other ids per application, over its life. */
  maxConfirmationReads: 10,
  /** Distinct ids kept while our own id is not known yet (the create's answer still on its way). */
  maxEarlyIds: 4,
} as const;

/** Counters of the webhooks naming another id that the bank did not confirm (FinanceApplicationState.otherIds). */
export type OtherIdCounters = NonNullable<FinanceApplicationState['otherIds']>;

/** What the next run needs: webhooks not acted on (each id once, bounded) and the ids the bank answered 404 for. */
export interface WebhookIdsSnapshot {
  pendingWebhookIds: string[];
  notFoundIds?: string[];
  /** Counted but not yet in the metric (the run continuing as new does not emit it: see takeUnconfirmed). */
  unreportedOtherIds?: { notFound: number; unchecked: number };
}

/** Webhooks taken by the loop: ours ask for one read; the others were counted as mismatched. */
export interface TakenWebhooks {
  ours: number;
  mismatched: number;
  /** Workflow time of the first webhook of the batch. */
  since?: number;
}

/** Unconfirmed webhooks since the last call, for the metric; `firstInRun`: the run logs them once. */
export interface Unconfirmed {
  notFound: number;
  unchecked: number;
  firstInRun: boolean;
}

export class WebhookIds {
  /** Webhooks received since the loop last took them (ours, others, and ids not yet told apart). */
  private received = 0;
  private ours = 0;
  private others = 0;
  private pendingSince: number | undefined;
  /** Before our id is known: each distinct id with its webhooks (at most maxEarlyIds ids). */
  private readonly early = new Map<string, number>();
  /** Other ids waiting for a confirmation read, and those being read, each with its webhooks. */
  private readonly candidates = new Map<string, number>();
  private readonly checking = new Map<string, number>();
  /** Ids the bank answered 404 for (one per read made, so at most maxConfirmationReads). */
  private readonly notFoundIds: string[];
  private unreported = { notFound: 0, unchecked: 0 };
  private loggedThisRun = false;

  constructor(
    private readonly state: FinanceApplicationState,
    carried?: WebhookIdsSnapshot,
  ) {
    this.notFoundIds = [...(carried?.notFoundIds ?? [])].slice(0, OTHER_ID_LIMITS.maxConfirmationReads);
    if (carried?.unreportedOtherIds) this.unreported = { ...carried.unreportedOtherIds };
    // Snapshots from before these bounds may hold thousands of ids: each goes through the same bounded intake.
    for (const id of carried?.pendingWebhookIds ?? []) this.add(id);
  }

  /** The signal handler: only records (`at`: workflow time, for the webhook-to-recorded delay). */
  receive(financeApplicationId: string, at?: number): void {
    this.state.webhooksReceived += 1;
    this.add(financeApplicationId, at);
  }

  has(): boolean {
    return this.received > 0;
  }

  /** Every webhook since the last take, answered by at most one read of ours (a burst coalesces). */
  take(): TakenWebhooks {
    const taken = { ours: this.ours, mismatched: this.others, since: this.pendingSince };
    this.received = this.ours = this.others = 0;
    this.pendingSince = undefined;
    this.state.mismatchedWebhooks += taken.mismatched;
    if (taken.ours > 0) this.state.webhooksLive = true;
    return taken;
  }

  /** Our own id is known now (the create answered): the ids that came before it are told apart. */
  ourIdKnown(): void {
    const early = [...this.early];
    this.early.clear();
    for (const [id, webhooks] of early) this.classify(id, webhooks);
  }

  /** Other ids to confirm now: each is then being read until confirmed(), notFound() or readFailed(). */
  takeCandidates(): string[] {
    const ids = [...this.candidates.keys()];
    for (const id of ids) this.checking.set(id, this.candidates.get(id)!);
    this.candidates.clear();
    return ids;
  }

  /**
   * The bank knows this id: a duplicate application. Returns true when it is recorded (and so reported); false when
   * it was known already or there is no room left (then its webhooks count as unchecked).
   */
  confirmed(id: string): boolean {
    const webhooks = this.resolve(id);
    const duplicates = this.state.duplicateApplicationIds ?? [];
    if (duplicates.includes(id)) return false;
    if (duplicates.length >= OTHER_ID_LIMITS.maxDuplicates) {
      this.count('unchecked', webhooks);
      return false;
    }
    this.state.duplicateApplicationIds = [...duplicates, id];
    return true;
  }

  /** The bank answered 404 for this id: invented (or a typo); its later webhooks are counted without a read. */
  notFound(id: string): void {
    this.count('notFound', this.resolve(id));
    if (!this.notFoundIds.includes(id)) this.notFoundIds.push(id);
  }

  /** The confirmation read failed (the bank unavailable past the retries): its webhooks count as unchecked. */
  readFailed(id: string): void {
    this.count('unchecked', this.resolve(id));
  }

  /** Confirmation reads this application may still make. */
  readsLeft(): number {
    return OTHER_ID_LIMITS.maxConfirmationReads - (this.state.otherIds?.reads ?? 0);
  }

  /**
   * Unconfirmed webhooks since the last call (for the metric), or undefined when there were none. Not taken, they are
   * carried by the snapshot: a workflow task that continues as new is refused by the server when signals came during
   * it, and the worker runs it again, so a metric emitted in it would count twice.
   */
  takeUnconfirmed(): Unconfirmed | undefined {
    const { notFound, unchecked } = this.unreported;
    if (notFound + unchecked === 0) return undefined;
    this.unreported = { notFound: 0, unchecked: 0 };
    const firstInRun = !this.loggedThisRun;
    this.loggedThisRun = true;
    return { notFound, unchecked, firstInRun };
  }

  /**
   * What continue-as-new carries: our id once if a webhook of ours waits, each waiting other id once, and the ids
   * found unknown. Bounded: 1 + maxDuplicates + maxEarlyIds pending ids and maxConfirmationReads unknown ones.
   */
  snapshot(): WebhookIdsSnapshot {
    const own = this.state.financeApplicationId;
    const pending = [
      ...(this.ours > 0 && own !== undefined ? [own] : []),
      ...this.early.keys(),
      ...this.candidates.keys(),
      // Being read at continue-as-new (never: reads are awaited in the loop): read again by the next run.
      ...this.checking.keys(),
    ];
    const { notFound, unchecked } = this.unreported;
    return {
      pendingWebhookIds: pending,
      ...(this.notFoundIds.length > 0 ? { notFoundIds: [...this.notFoundIds] } : {}),
      ...(notFound + unchecked > 0 ? { unreportedOtherIds: { notFound, unchecked } } : {}),
    };
  }

  private add(id: string, at?: number): void {
    if (this.received === 0) this.pendingSince = at;
    this.received += 1;
    if (this.state.financeApplicationId === undefined) {
      // Not told apart yet: kept by id while there is room, else counted (our own webhook then waits for the poll).
      const seen = this.early.get(id);
      if (seen !== undefined) this.early.set(id, seen + 1);
      else if (this.early.size < OTHER_ID_LIMITS.maxEarlyIds) this.early.set(id, 1);
      else this.count('unchecked', 1);
      return;
    }
    this.classify(id, 1);
  }

  private classify(id: string, webhooks: number): void {
    if (id === this.state.financeApplicationId) {
      this.ours += webhooks;
      return;
    }
    this.others += webhooks;
    if (this.state.duplicateApplicationIds?.includes(id)) return; // a confirmed duplicate's own status change
    if (this.notFoundIds.includes(id)) return this.count('notFound', webhooks);
    for (const waiting of [this.candidates, this.checking]) {
      const seen = waiting.get(id);
      if (seen !== undefined) return void waiting.set(id, seen + webhooks);
    }
    const waiting = this.candidates.size + this.checking.size;
    const room = Math.min(
      OTHER_ID_LIMITS.maxDuplicates - (this.state.duplicateApplicationIds?.length ?? 0),
      this.readsLeft(),
    );
    if (waiting < room) this.candidates.set(id, webhooks);
    else this.count('unchecked', webhooks);
  }

  /** Ends a confirmation read of `id`: one read spent; returns the webhooks that named it. */
  private resolve(id: string): number {
    const webhooks = this.checking.get(id) ?? 0;
    this.checking.delete(id);
    this.counters().reads += 1;
    return webhooks;
  }

  private count(verdict: 'notFound' | 'unchecked', webhooks: number): void {
    if (webhooks === 0) return;
    this.counters()[verdict] += webhooks;
    this.unreported[verdict] += webhooks;
  }

  private counters(): OtherIdCounters {
    this.state.otherIds ??= { reads: 0, notFound: 0, unchecked: 0 };
    return this.state.otherIds;
  }
}
