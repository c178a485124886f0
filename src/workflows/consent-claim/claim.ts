import { ApplicationFailure } from '@temporalio/common';
import { ConsentClaimFailureType, type ConsentClaimInput, type ConsentClaimState } from '../../shared/consent-claim';

/**
 * The decisions of a consent's claim, as plain code: who may release it, and what a move to a new build carries.
 * No Temporal API here, so it is unit-tested directly (test/workflows/consent-claim/claim.test.ts).
 */
export class ConsentClaim {
  readonly state: ConsentClaimState;

  constructor(input: ConsentClaimInput, runStartTime: Date) {
    this.state = {
      consentId: input.consentId,
      merchantId: input.merchantId,
      // Carried across continue-as-new (a move to a new build); the first run's start otherwise.
      claimedAt: input.claimedAt ?? runStartTime.toISOString(),
      released: false,
    };
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

  /** The next run's input when the claim moves to a new build: the same owner and claim time. */
  continued(): ConsentClaimInput {
    return { consentId: this.state.consentId, merchantId: this.state.merchantId, claimedAt: this.state.claimedAt };
  }
}
