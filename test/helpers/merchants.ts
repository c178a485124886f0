import type { Client } from '@temporalio/client';
import { claimConsent, type ConsentClaim } from '../../src/client/consent-claims';
import { TEST_MERCHANT } from '../../tools/harness/merchant-fixtures';

export {
  TEST_CALLBACK_SIGNING_MASTER_SECRET,
  TEST_CALLBACK_SIGNING_SECRET,
  TEST_MERCHANT,
  testMerchants,
  type TestMerchantsOptions,
} from '../../tools/harness/merchant-fixtures';

/**
 * Claims the consent for the merchant (the stack's by default), as its first refresh would: only a claimed
 * consent's account webhooks start anything (a late report, a transactionEvents workflow) since tenancy.
 */
export function claimTestConsent(
  t: { client: Client; taskQueue: string },
  consentId: string,
  merchant = TEST_MERCHANT,
): Promise<ConsentClaim> {
  return claimConsent(t.client, merchant, consentId, { taskQueue: t.taskQueue });
}
