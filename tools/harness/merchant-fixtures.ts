import {
  buildMerchantDirectory,
  DEFAULT_MERCHANT_LIMITS,
  type MerchantDirectory,
  type MerchantsFile,
} from '../../src/config/merchants';
import type { CallbackAllowList } from '../../src/security/callback-url';
import { CURRENT_CALLBACK_PAYLOAD_VERSION, type CallbackPayloadVersion } from '../../src/activities/callback-payload';

/** The merchant fixtures of the in-process stack (tools/harness/in-process-stack.ts), shared by tests and benches. */

/** The merchant of the test stack's default key (TEST_API_KEY's name), also its legacy merchant. */
export const TEST_MERCHANT = 'test';

/** The test stack's callback signing secret (Standard Webhooks format) unless a test sets its own. */
export const TEST_CALLBACK_SIGNING_SECRET = `whsec_${Buffer.from('test-stack merchant callback signing key').toString('base64')}`;

/** The master the test stack derives each merchant's secret from when it has several (or no explicit secret). */
export const TEST_CALLBACK_SIGNING_MASTER_SECRET = 'test-stack-master-of-the-merchant-callback-signing-secrets';

export interface TestMerchantsOptions {
  /** CALLBACK_ALLOWED_ORIGINS; default loopback origins allowed, as on the test stack. */
  allowList?: CallbackAllowList;
  /** CALLBACK_SIGNING_SECRETS; default TEST_CALLBACK_SIGNING_SECRET with one merchant, none with several. */
  signingSecrets?: readonly string[];
  /** CALLBACK_SIGNING_MASTER_SECRETS; default TEST_CALLBACK_SIGNING_MASTER_SECRET without explicit secrets. */
  signingMasters?: readonly string[];
  /** CALLBACK_PAYLOAD_VERSION; default the current version. */
  payloadVersion?: CallbackPayloadVersion;
  transactionsCallbackUrl?: string;
  /** MERCHANTS_FILE's content. */
  merchantsFile?: MerchantsFile;
}

/**
 * AppDeps.merchants for an app a test builds by hand: the merchants named by `keys` (the `test` merchant when
 * absent) over the test stack's defaults. Throws on a problem, as startup would refuse it.
 */
export function testMerchants(
  keys: readonly { name: string }[] = [{ name: TEST_MERCHANT }],
  options: TestMerchantsOptions = {},
): MerchantDirectory {
  const signingSecrets = options.signingSecrets ?? (keys.length > 1 ? [] : [TEST_CALLBACK_SIGNING_SECRET]);
  const built = buildMerchantDirectory({
    keys: keys.map(({ name }) => ({ name, key: '' })),
    keysConfigured: keys.length > 0,
    fileJson: options.merchantsFile,
    defaults: {
      allowList: options.allowList ?? { origins: [], loopback: true },
      builtInAllowList: options.allowList === undefined,
      signingSecrets,
      signingMasters:
        options.signingMasters ?? (signingSecrets.length === 0 ? [TEST_CALLBACK_SIGNING_MASTER_SECRET] : []),
      payloadVersion: options.payloadVersion ?? CURRENT_CALLBACK_PAYLOAD_VERSION,
      transactionsCallbackUrl: options.transactionsCallbackUrl,
      limits: DEFAULT_MERCHANT_LIMITS,
    },
  });
  if (!built.directory) throw new Error(`test merchants: ${built.problems.map((p) => p.message).join('; ')}`);
  return built.directory;
}
