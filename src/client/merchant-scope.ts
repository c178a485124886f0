import { MERCHANT_ID_PATTERN } from '../shared/ids';

/**
 * Whose applications and refreshes a call acts on. The typed client runs with the Temporal namespace's
 * credentials, so it is trusted with every merchant (docs/merchant-api.md, "Merchants": third parties go through the facade);
 * the scope is what keeps one merchant's calls to its own, and builds the same ids as the facade.
 */
export interface MerchantScope {
  /** The merchant's id: the name of its key in MERCHANT_API_KEYS. */
  merchantId: string;
}

/** A scope from a merchant id or a scope; throws RangeError for an id outside MERCHANT_ID_PATTERN. */
export function merchantScope(merchant: MerchantScope | string): MerchantScope {
  const scope = typeof merchant === 'string' ? { merchantId: merchant } : merchant;
  if (!MERCHANT_ID_PATTERN.test(scope.merchantId)) {
    throw new RangeError(`merchantId must match ${String(MERCHANT_ID_PATTERN)}`);
  }
  return scope;
}
