import type { Client } from '@temporalio/client';
import { recordConsentClaimConflict, type ConsentHeldByAnotherError } from '../client/consent-claims';
import type { Logger } from '../telemetry/logging';
import type { MerchantDirectory } from '../config/merchants';
import { consentAssignmentFor, type ConsentAssignment } from '../shared/consent-assignment';
import type { Metrics } from './metrics';

/**
 * The consent routes' side of CONSENT_ASSIGNMENT (docs/decisions/0046-consents-assigned-by-an-operator.md): the rule
 * in force, and what happens when a merchant's claim meets another merchant's consent.
 */

/** The rule in force: the one configured, else CONSENT_ASSIGNMENT's default (`auto`) over the merchants listed. */
export function consentAssignmentOf(deps: {
  consentAssignment?: ConsentAssignment;
  merchants: Pick<MerchantDirectory, 'ids'>;
}): ConsentAssignment {
  return deps.consentAssignment ?? consentAssignmentFor('auto', deps.merchants.ids().length);
}

export interface ConsentClaimConflictDeps {
  client: Client;
  metrics: Pick<Metrics, 'consentClaimConflicts'>;
  logger: Logger;
}

/** How often one API process records the same merchant's refused claims of one consent on its claim workflow. */
export const CONFLICT_RECORD_INTERVAL_MS = 10 * 60_000;
const MAX_REMEMBERED = 10_000;

/**
 * The start-up warning of a deployment where several merchants claim consents themselves (CONSENT_ASSIGNMENT set to
 * `merchant`): a claim's answer then tells a merchant whether another holds a consent id, and the first to name a
 * free consent gets it. Undefined otherwise.
 */
export function consentAssignmentWarning(config: {
  consentAssignment: { rule: ConsentAssignment };
  merchants: Pick<MerchantDirectory, 'ids'>;
}): string | undefined {
  if (config.consentAssignment.rule !== 'merchant' || config.merchants.ids().length < 2) return undefined;
  return (
    'CONSENT_ASSIGNMENT=merchant with several merchants: the first merchant to name a free consent owns it, and a ' +
    'refused claim tells a merchant that another holds that consent id; unset it to have operators assign consents ' +
    '(docs/decisions/0046-consents-assigned-by-an-operator.md)'
  );
}

/**
 * Another merchant owns the consent, so a merchant's claim or refresh of it was refused (the merchant is answered
 * as for an unknown consent, by the route). For operators (docs/decisions/0046-consents-assigned-by-an-operator.md):
 * counted in paylater_consent_claim_conflicts_total, logged at warn (merchants and consent id, nothing secret), and
 * recorded on the consent's claim (its state, and ConsentClaimConflict for the first merchant refused). The record
 * is a signal sent without waiting for it, so the answer does not take longer than an unknown consent's; the same
 * merchant and consent are signalled at most once per CONFLICT_RECORD_INTERVAL_MS by one instance (the internal app
 * makes one for both consent routes), so repeated claims cannot grow the owner's claim history (the metric still
 * counts each).
 */
export class ConsentClaimConflicts {
  /** When each (consent, merchant) conflict was last recorded. */
  private readonly recorded = new Map<string, number>();

  constructor(private readonly deps: ConsentClaimConflictDeps) {}

  refused(held: ConsentHeldByAnotherError, merchantId: string, via: 'claim' | 'refresh'): void {
    const { deps } = this;
    deps.metrics.consentClaimConflicts.inc({ merchant: merchantId, owner: held.owner, via });
    deps.logger.warn(
      { merchant: merchantId, owner: held.owner, consentId: held.consentId, via },
      "consent claim refused: another merchant's consent",
    );
    if (held.firstConflict === merchantId || !this.due(`${held.consentId}\n${merchantId}`)) return;
    recordConsentClaimConflict(deps.client, held.consentId, { merchantId, at: new Date() }).catch((err: unknown) =>
      deps.logger.warn(
        { merchant: merchantId, consentId: held.consentId, cause: err instanceof Error ? err.message : String(err) },
        'consent claim conflict not recorded on the claim',
      ),
    );
  }

  /** True (and remembered) when the conflict was not recorded within the interval. */
  private due(key: string, now = Date.now()): boolean {
    const times = this.recorded;
    const last = times.get(key);
    if (last !== undefined && now - last < CONFLICT_RECORD_INTERVAL_MS) return false;
    times.delete(key);
    times.set(key, now);
    while (times.size > MAX_REMEMBERED) times.delete(times.keys().next().value!);
    return true;
  }
}
