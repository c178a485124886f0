import { ApplicationFailure } from '@temporalio/common';
import {
  ConsentClaimFailureType,
  MAX_CONSENT_CLAIM_CONFLICTS,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../../shared/consent-claim';

/**
 * The decisions of a consent's claim, as plain code: who may release it, which refused claims it keeps, and what a
 * move to a new build carries. No Temporal API here, so it is unit-tested directly
 * (test/workflows/consent-claim/claim.test.ts).
 */
export class ConsentClaim {
  readonly state: ConsentClaimState;
  /** The merchant the ConsentClaimConflict search attribute names, once the workflow has set it. */
  private conflictPublished: string | undefined;

  constructor(input: ConsentClaimInput, runStartTime: Date, publishedConflict?: string) {
    this.state = {
      consentId: input.consentId,
      merchantId: input.merchantId,
      // Carried across continue-as-new (a move to a new build); the first run's start otherwise.
      claimedAt: input.claimedAt ?? runStartTime.toISOString(),
      released: false,
      // Added only when present: a claim without them keeps the state (and result) it always had.
      ...(input.assignedBy !== undefined && { assignedBy: input.assignedBy }),
      ...(input.conflicts && input.conflicts.length > 0 && { conflicts: input.conflicts.map((c) => ({ ...c })) }),
    };
    // A run that continued as new keeps its search attributes: the first conflict is already set.
    this.conflictPublished = publishedConflict;
  }

  /** The release update's validator: only the owner releases (a rejected update leaves no trace in the history). */
  validateRelease({ merchantId }: { merchantId: string }): void {
    if (merchantId !== this.state.merchantId)
      throw ApplicationFailure.nonRetryable('not the owner of this consent', ConsentClaimFailureType.NotOwner);
  }

  release(): ConsentClaimState {
    this.state.released = true;
    return this.state;
  }

  /**
   * Another merchant's claim was refused (the conflict signal): one entry per merchant, its count and times; at most
   * MAX_CONSENT_CLAIM_CONFLICTS merchants. The owner's own name is no conflict.
   */
  recordConflict({ merchantId, at }: { merchantId: string; at: string }): void {
    if (merchantId === this.state.merchantId) return;
    const conflicts = (this.state.conflicts ??= []);
    const known = conflicts.find((c) => c.merchantId === merchantId);
    if (known) {
      known.count++;
      if (at > known.lastAt) known.lastAt = at;
      if (at < known.firstAt) known.firstAt = at;
      return;
    }
    if (conflicts.length >= MAX_CONSENT_CLAIM_CONFLICTS) return;
    conflicts.push({ merchantId, firstAt: at, lastAt: at, count: 1 });
  }

  /** The merchant to set as ConsentClaimConflict (the first refused one) while the attribute is not set yet. */
  conflictToPublish(): string | undefined {
    if (this.conflictPublished !== undefined) return undefined;
    return this.state.conflicts?.[0]?.merchantId;
  }

  published(merchantId: string): void {
    this.conflictPublished = merchantId;
  }

  /** The next run's input when the claim moves to a new build: the same owner, claim time and conflicts. */
  continued(): ConsentClaimInput {
    return {
      consentId: this.state.consentId,
      merchantId: this.state.merchantId,
      claimedAt: this.state.claimedAt,
      ...(this.state.assignedBy !== undefined && { assignedBy: this.state.assignedBy }),
      ...(this.state.conflicts && this.state.conflicts.length > 0 && { conflicts: this.state.conflicts }),
    };
  }
}
