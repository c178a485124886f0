import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import {
  consentClaimConflictSignal,
  consentClaimQuery,
  consentClaimWorkflowType,
  releaseConsentClaimUpdate,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../shared/consent-claim';
import { consentClaimWorkflowId, REFERENCE_PATTERN } from '../shared/ids';
import { ConsentClaimConflict, ConsentId, MerchantId } from '../shared/search-attributes';
import type { consentClaimWorkflow } from '../workflows/consent-claim/workflow';
import { merchantScope, type MerchantScope } from './merchant-scope';
import { isClosedRunError } from './status-waits';

/** The consent is not the caller's (unknown, or another merchant's): to the caller it does not exist (the facade's 404). */
export class ConsentNotFoundError extends Error {
  constructor(readonly consentId: string) {
    super(`No consent ${consentId} for this merchant`);
    this.name = 'ConsentNotFoundError';
  }
}

/**
 * The consent is another merchant's: a claim of it is refused. The same to the caller as ConsentNotFoundError (the
 * facade answers both alike); `owner` and `firstConflict` are for the record the API keeps (recordConsentClaimConflict).
 */
export class ConsentHeldByAnotherError extends ConsentNotFoundError {
  constructor(
    consentId: string,
    /** The merchant that owns it. */
    readonly owner: string,
    /** The merchant its ConsentClaimConflict search attribute names (the first refused one), if any. */
    readonly firstConflict: string | undefined,
  ) {
    super(consentId);
    this.name = 'ConsentHeldByAnotherError';
  }
}

export interface ConsentClaim {
  consentId: string;
  merchantId: string;
  /** True when this call made the claim (the consent had no owner). */
  claimedNow: boolean;
}

export interface ClaimConsentOptions {
  taskQueue: string;
  /**
   * Whether the merchant may claim a consent nobody owns (CONSENT_ASSIGNMENT `merchant`, docs/decisions/0046). False:
   * only a consent already the merchant's is confirmed; a free one throws ConsentNotFoundError (an operator assigns
   * it). Default true: the typed client holds the namespace's credentials and is trusted (docs/merchant-api.md).
   */
  selfClaim?: boolean;
}

/**
 * Claims the consent for the merchant, or confirms that it already owns it: a claim holds until its owner (or an
 * operator) releases it, and the consent's account webhooks reach its owner only. Throws ConsentHeldByAnotherError
 * when another merchant owns it, ConsentNotFoundError when it is free and `selfClaim` is false. One start
 * (FAIL on a running claim) and, when the claim existed, one describe; without selfClaim, one describe.
 */
export async function claimConsent(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
  options: ClaimConsentOptions,
): Promise<ConsentClaim> {
  const { merchantId } = merchantScope(merchant);
  if (!REFERENCE_PATTERN.test(consentId)) throw new RangeError(`consentId must match ${String(REFERENCE_PATTERN)}`);
  if (options.selfClaim === false) {
    const claim = await describeClaim(client, consentId);
    if (claim?.owner === merchantId) return { consentId, merchantId, claimedNow: false };
    if (claim) throw new ConsentHeldByAnotherError(consentId, claim.owner, claim.firstConflict);
    throw new ConsentNotFoundError(consentId);
  }
  if (await startClaim(client, consentId, { merchantId, taskQueue: options.taskQueue }))
    return { consentId, merchantId, claimedNow: true };
  const claim = await describeClaim(client, consentId);
  // Released between the start and the describe: claim again.
  if (claim === undefined) return claimConsent(client, merchant, consentId, options);
  if (claim.owner !== merchantId) throw new ConsentHeldByAnotherError(consentId, claim.owner, claim.firstConflict);
  return { consentId, merchantId, claimedNow: false };
}

/** Starts the consent's claim for the merchant; false when a claim runs already (it is never replaced). */
async function startClaim(
  client: Client,
  consentId: string,
  claim: { merchantId: string; taskQueue: string; assignedBy?: string },
): Promise<boolean> {
  const input: ConsentClaimInput = {
    consentId,
    merchantId: claim.merchantId,
    ...(claim.assignedBy !== undefined && { assignedBy: claim.assignedBy }),
  };
  try {
    await client.workflow.start<typeof consentClaimWorkflow>(consentClaimWorkflowType, {
      workflowId: consentClaimWorkflowId(consentId),
      taskQueue: claim.taskQueue,
      args: [input],
      // A running claim is never replaced: the start fails and the owner is read.
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: MerchantId, value: claim.merchantId },
        { key: ConsentId, value: consentId },
      ],
      staticSummary:
        claim.assignedBy === undefined
          ? `Consent ${consentId} claimed by ${claim.merchantId}`
          : `Consent ${consentId} assigned to ${claim.merchantId} by operator ${claim.assignedBy}`,
    });
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/** The consent's running claim: its owner and the first refused claimant; undefined when nobody owns it. */
async function describeClaim(
  client: Client,
  consentId: string,
): Promise<{ owner: string; firstConflict: string | undefined } | undefined> {
  try {
    const description = await client.workflow.getHandle(consentClaimWorkflowId(consentId)).describe();
    if (description.status.name !== 'RUNNING') return undefined;
    const owner = description.typedSearchAttributes.get(MerchantId);
    if (owner === undefined) return undefined;
    return { owner, firstConflict: description.typedSearchAttributes.get(ConsentClaimConflict) };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * Records, on the consent's claim, that another merchant's claim of it was refused (the claim keeps one entry per
 * merchant; the first is set as its ConsentClaimConflict search attribute). Nothing when the claim has ended since.
 */
export async function recordConsentClaimConflict(
  client: Client,
  consentId: string,
  conflict: { merchantId: string; at: Date },
): Promise<void> {
  try {
    await client.workflow
      .getHandle<typeof consentClaimWorkflow>(consentClaimWorkflowId(consentId))
      .signal(consentClaimConflictSignal, { merchantId: conflict.merchantId, at: conflict.at.toISOString() });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || isClosedRunError(err)) return;
    throw err;
  }
}

/** What an operator reads of a consent's claim. */
export interface ConsentAssignmentView extends ConsentClaimState {
  /** True when the claim's search attribute names a refused claimant (the state lists them all). */
  conflicted: boolean;
}

export interface AssignConsentResult {
  consentId: string;
  merchantId: string;
  /** True when this call gave the consent its owner; false when it was that merchant's already. */
  assignedNow: boolean;
  /** The merchant it was taken from (a reassignment), or null. */
  previousMerchantId: string | null;
}

/**
 * An operator gives the consent to a merchant (PUT /operator/consents/{consentId}): the claim is started with the
 * operator's name (`assignedBy`). A consent that is another merchant's throws ConsentHeldByAnotherError, unless
 * `reassign`: its claim is then released and the consent assigned anew (its previous owner's refreshes and late
 * reports stay the previous owner's, as after a release).
 */
export async function assignConsent(
  client: Client,
  consentId: string,
  assignment: { merchantId: string; operator: string; reassign?: boolean },
  options: { taskQueue: string },
): Promise<AssignConsentResult> {
  const { merchantId } = merchantScope(assignment.merchantId);
  if (!REFERENCE_PATTERN.test(consentId)) throw new RangeError(`consentId must match ${String(REFERENCE_PATTERN)}`);
  let previousMerchantId: string | null = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (
      await startClaim(client, consentId, { merchantId, taskQueue: options.taskQueue, assignedBy: assignment.operator })
    )
      return { consentId, merchantId, assignedNow: true, previousMerchantId };
    const claim = await describeClaim(client, consentId);
    if (claim === undefined) continue; // released meanwhile: assign again
    if (claim.owner === merchantId) return { consentId, merchantId, assignedNow: false, previousMerchantId };
    if (!assignment.reassign) throw new ConsentHeldByAnotherError(consentId, claim.owner, claim.firstConflict);
    try {
      await releaseConsent(client, claim.owner, consentId);
    } catch (err) {
      // Released, or moved, between the describe and the release: look again.
      if (!(err instanceof ConsentNotFoundError)) throw err;
    }
    previousMerchantId = claim.owner;
  }
  throw new Error(`Consent ${consentId} changed hands during its assignment; try again`);
}

/**
 * An operator ends the consent's claim, whoever owns it (DELETE /operator/consents/{consentId}): its account
 * webhooks start nothing until it is assigned or claimed again. Throws ConsentNotFoundError when nobody owns it.
 */
export async function releaseConsentAsOperator(client: Client, consentId: string): Promise<ConsentClaimState> {
  for (let attempt = 0; ; attempt++) {
    const claim = await describeClaim(client, consentId);
    if (claim === undefined) throw new ConsentNotFoundError(consentId);
    try {
      // The release update's validator checks the owner: the one just read.
      return await releaseConsent(client, claim.owner, consentId);
    } catch (err) {
      // Moved between the describe and the release: look again (a few times).
      if (!(err instanceof ConsentNotFoundError) || attempt >= 2) throw err;
    }
  }
}

/** The consent's running claim as an operator sees it (a query of the claim), or undefined when nobody owns it. */
export async function consentAssignment(client: Client, consentId: string): Promise<ConsentAssignmentView | undefined> {
  const claim = await describeClaim(client, consentId);
  if (claim === undefined) return undefined;
  let state: ConsentClaimState;
  try {
    state = await client.workflow
      .getHandle<typeof consentClaimWorkflow>(consentClaimWorkflowId(consentId))
      .query(consentClaimQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || isClosedRunError(err)) return undefined;
    throw err;
  }
  return { ...state, conflicted: claim.firstConflict !== undefined };
}

/** The merchant that owns the consent (its running claim), or undefined when no merchant has claimed it. */
export async function consentOwner(client: Client, consentId: string): Promise<string | undefined> {
  return (await describeClaim(client, consentId))?.owner;
}

/**
 * Releases the merchant's claim: the consent's account webhooks are no longer delivered to it, and it may be assigned
 * or claimed again. Throws ConsentNotFoundError when the merchant does not own it.
 */
export async function releaseConsent(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
): Promise<ConsentClaimState> {
  const { merchantId } = merchantScope(merchant);
  let released: ConsentClaimState;
  try {
    released = await client.workflow
      .getHandle<typeof consentClaimWorkflow>(consentClaimWorkflowId(consentId))
      .executeUpdate(releaseConsentClaimUpdate, { args: [{ merchantId }] });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || err instanceof WorkflowUpdateFailedError || isClosedRunError(err))
      throw new ConsentNotFoundError(consentId);
    throw err;
  }
  // This process's receiver no longer hands the consent's events to the merchant from now (others: within the TTL).
  ConsentOwners.forClient(client).forget(consentId);
  return released;
}

/**
 * Owners of consents, cached in a process: a claim does not change owner while it runs, so a positive answer is
 * kept for `ttlMs` (DEFAULT_CONSENT_OWNER_TTL_MS); an unclaimed consent is asked again each time (a claim may come
 * any moment). A release through this process's client is seen at once (releaseConsent forgets the entry); one
 * through another process within the TTL: until then this process's receiver still hands the consent's events to
 * the merchant that released it. Bounded: the oldest entries go first.
 */
export class ConsentOwners {
  private static readonly byClient = new WeakMap<Client, ConsentOwners>();

  /** The one cache of a client (its process's receiver and facade share it). */
  static forClient(client: Client): ConsentOwners {
    let owners = ConsentOwners.byClient.get(client);
    if (!owners) {
      owners = new ConsentOwners(client);
      ConsentOwners.byClient.set(client, owners);
    }
    return owners;
  }

  private readonly owners = new Map<string, { merchantId: string; until: number }>();
  constructor(
    private readonly client: Client,
    private readonly options: { ttlMs?: number; maxEntries?: number } = {},
  ) {}

  async of(consentId: string): Promise<string | undefined> {
    const now = Date.now();
    const cached = this.owners.get(consentId);
    if (cached && cached.until > now) return cached.merchantId;
    this.owners.delete(consentId);
    const merchantId = await consentOwner(this.client, consentId);
    if (merchantId !== undefined) this.remember(consentId, merchantId, now);
    return merchantId;
  }

  /** Drops the consent's entry: its next event reads the claim again. */
  forget(consentId: string): void {
    this.owners.delete(consentId);
  }

  private remember(consentId: string, merchantId: string, now = Date.now()): void {
    this.owners.set(consentId, { merchantId, until: now + (this.options.ttlMs ?? DEFAULT_CONSENT_OWNER_TTL_MS) });
    const max = this.options.maxEntries ?? 10_000;
    while (this.owners.size > max) this.owners.delete(this.owners.keys().next().value!);
  }
}

/**
 * How long a process trusts a consent's owner it has read: the longest a release through another API process goes
 * unseen by this one's receiver. One describe of the claim per consent and TTL at most, whatever the events.
 */
export const DEFAULT_CONSENT_OWNER_TTL_MS = 10_000;
