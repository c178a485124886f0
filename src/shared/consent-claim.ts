import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/**
 * A consent's claim: the bank's account webhooks carry only the consent id, so a consent belongs to the merchant
 * its claim names: assigned by an operator, or claimed by the merchant itself where CONSENT_ASSIGNMENT allows it
 * (src/shared/consent-assignment.ts). The claim is a small workflow per consent (id consentClaimWorkflowId) that runs
 * until released; its MerchantId search attribute names the owner, so the receiver and the facade read it with one
 * describe and no worker. ConsentClaimConflict names the first other merchant whose claim was refused.
 */
export const consentClaimWorkflowType = 'consentClaimWorkflow';

export interface ConsentClaimInput {
  consentId: string;
  /** The owner: the merchant it was assigned to, or that claimed it. */
  merchantId: string;
  /** ISO time of the claim, carried when the claim continues as new onto a new build (absent: the run's start). */
  claimedAt?: string;
  /** The operator (its key's name) that assigned the consent; absent: the merchant claimed it itself. */
  assignedBy?: string;
  /** The refused claims so far, carried when the claim continues as new. */
  conflicts?: ConsentClaimConflict[];
}

/** Another merchant's refused claims of the consent (one entry per merchant). */
export interface ConsentClaimConflict {
  merchantId: string;
  /** ISO times of its first and latest refused claim, as the API saw them. */
  firstAt: string;
  lastAt: string;
  /** Refused claims recorded (the API records a merchant's repeats only now and then). */
  count: number;
}

export interface ConsentClaimState {
  consentId: string;
  merchantId: string;
  /** ISO time of the claim. */
  claimedAt: string;
  released: boolean;
  /** The operator that assigned it; absent when the merchant claimed it (and in claims from before operators). */
  assignedBy?: string;
  /** Other merchants' refused claims; absent in claims from before conflicts were recorded. */
  conflicts?: ConsentClaimConflict[];
}

export const consentClaimQuery = defineQuery<ConsentClaimState>('consentClaim');

/** Ends the claim (the owner releases the consent); another merchant may then claim it. */
export const releaseConsentClaimUpdate = defineUpdate<ConsentClaimState, [{ merchantId: string }]>(
  'releaseConsentClaim',
);

/** A claim of the consent by another merchant was refused (sent by the API; recorded, never answered). */
export const consentClaimConflictSignal = defineSignal<[{ merchantId: string; at: string }]>('consentClaimConflict');

/** Other merchants kept in a claim's conflicts; beyond them a refused claim is counted by the API's metric only. */
export const MAX_CONSENT_CLAIM_CONFLICTS = 20;

/** Failure types of the claim's messages. */
export const ConsentClaimFailureType = {
  /** A release asked by a merchant that does not own the claim. */
  NotOwner: 'ConsentClaimNotOwner',
} as const;
