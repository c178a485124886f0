import { defineQuery, defineUpdate } from '@temporalio/workflow';

/**
 * A consent's claim: the bank's account webhooks carry only the consent id, so a consent belongs to the merchant
 * that first claimed it (by refreshing it, or by registering it: PUT /consents/:consentId). The claim is a small
 * workflow per consent (id consentClaimWorkflowId) that runs until released; its MerchantId search attribute names
 * the owner, so the receiver and the facade read it with one describe and no worker.
 */
export const consentClaimWorkflowType = 'consentClaimWorkflow';

export interface ConsentClaimInput {
  consentId: string;
  /** The owner: the merchant that claimed it first. */
  merchantId: string;
  /** ISO time of the claim, carried when the claim continues as new onto a new build (absent: the run's start). */
  claimedAt?: string;
}

export interface ConsentClaimState {
  consentId: string;
  merchantId: string;
  /** ISO time of the claim. */
  claimedAt: string;
  released: boolean;
}

export const consentClaimQuery = defineQuery<ConsentClaimState>('consentClaim');

/** Ends the claim (the owner releases the consent); another merchant may then claim it. */
export const releaseConsentClaimUpdate = defineUpdate<ConsentClaimState, [{ merchantId: string }]>(
  'releaseConsentClaim',
);

/** Failure types of the claim's messages. */
export const ConsentClaimFailureType = {
  /** A release asked by a merchant that does not own the claim. */
  NotOwner: 'ConsentClaimNotOwner',
} as const;
