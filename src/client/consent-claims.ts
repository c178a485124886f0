import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import {
  consentClaimWorkflowType,
  releaseConsentClaimUpdate,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../shared/consent-claim';
import { consentClaimWorkflowId, REFERENCE_PATTERN } from '../shared/ids';
import { ConsentId, MerchantId } from '../shared/search-attributes';
import type { consentClaimWorkflow } from '../workflows/consent-claim/workflow';
import { merchantScope, type MerchantScope } from './merchant-scope';
import { isClosedRunError } from './status-waits';

/** The consent is claimed by another merchant: to the caller it is as if it did not exist (the facade's 404). */
export class ConsentNotFoundError extends Error {
  constructor(readonly consentId: string) {
    super(`No consent ${consentId} for this merchant`);
    this.name = 'ConsentNotFoundError';
  }
}

export interface ConsentClaim {
  consentId: string;
  merchantId: string;
  /** True when this call made the claim (the consent had no owner). */
  claimedNow: boolean;
}

/**
 * Claims the consent for the merchant, or confirms that it already owns it: the first merchant to claim a consent
 * owns it until it releases it (its account webhooks then reach that merchant only). Throws ConsentNotFoundError
 * when another merchant owns it. One start (USE_EXISTING) and, when the claim existed, one describe.
 */
export async function claimConsent(
  client: Client,
  merchant: MerchantScope | string,
  consentId: string,
  options: { taskQueue: string },
): Promise<ConsentClaim> {
  const { merchantId } = merchantScope(merchant);
  if (!REFERENCE_PATTERN.test(consentId)) throw new RangeError(`consentId must match ${String(REFERENCE_PATTERN)}`);
  const workflowId = consentClaimWorkflowId(consentId);
  const input: ConsentClaimInput = { consentId, merchantId };
  let handle;
  try {
    handle = await client.workflow.start<typeof consentClaimWorkflow>(consentClaimWorkflowType, {
      workflowId,
      taskQueue: options.taskQueue,
      args: [input],
      // A running claim is never replaced: the start fails and the owner is read below.
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: MerchantId, value: merchantId },
        { key: ConsentId, value: consentId },
      ],
      staticSummary: `Consent ${consentId} claimed by ${merchantId}`,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  if (handle) return { consentId, merchantId, claimedNow: true };
  const owner = await consentOwner(client, consentId);
  // Released between the start and the describe: claim again.
  if (owner === undefined) return claimConsent(client, merchant, consentId, options);
  if (owner !== merchantId) throw new ConsentNotFoundError(consentId);
  return { consentId, merchantId, claimedNow: false };
}

/** The merchant that owns the consent (its running claim), or undefined when no merchant has claimed it. */
export async function consentOwner(client: Client, consentId: string): Promise<string | undefined> {
  try {
    const description = await client.workflow.getHandle(consentClaimWorkflowId(consentId)).describe();
    if (description.status.name !== 'RUNNING') return undefined;
    return description.typedSearchAttributes.get(MerchantId);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/**
 * Releases the merchant's claim: the consent's account webhooks are no longer delivered to it, and any merchant may
 * claim it again. Throws ConsentNotFoundError when the merchant does not own it.
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
