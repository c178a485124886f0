/**
 * Who gives a consent its owner (docs/decisions/0046-consents-assigned-by-an-operator.md). The bank's account
 * webhooks carry only the consent id and the bank does not say which merchant a consent was made for, so no merchant
 * can show that a consent is its own. CONSENT_ASSIGNMENT decides:
 * - `operator`: consents are assigned by an operator (PUT /operator/consents/{consentId}); a merchant's claim or
 *   refresh of a consent that is not its own answers as an unknown one.
 * - `merchant`: a merchant claims a free consent itself (PUT /consents/{consentId}, or its first refresh); a claim of
 *   another merchant's consent is refused and recorded as a conflict.
 * - `auto` (the default): `merchant` when the deployment has exactly one merchant (the embedded stack's `dev`),
 *   `operator` otherwise.
 */
export const CONSENT_ASSIGNMENT_SETTINGS = ['auto', 'operator', 'merchant'] as const;
export type ConsentAssignmentSetting = (typeof CONSENT_ASSIGNMENT_SETTINGS)[number];

/** The rule in force once `auto` is resolved. */
export type ConsentAssignment = Exclude<ConsentAssignmentSetting, 'auto'>;

/** The rule of a deployment with `merchantCount` merchants (MERCHANT_API_KEYS). */
export function consentAssignmentFor(setting: ConsentAssignmentSetting, merchantCount: number): ConsentAssignment {
  if (setting !== 'auto') return setting;
  return merchantCount === 1 ? 'merchant' : 'operator';
}
