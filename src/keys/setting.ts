import { join } from 'node:path';
import { describeStoreSetting, parseStoreSetting, type StoreSetting } from '../audit/setting';

/** MERCHANT_KEY_STORE's variable name: problems and start-up failures name it. */
export const MERCHANT_KEY_STORE = 'MERCHANT_KEY_STORE';

/** Where the merchants' wrapped payload keys are kept: a file (one machine), or PostgreSQL (several processes). */
export type MerchantKeyStoreSetting = StoreSetting;

/** MERCHANT_KEY_STORE unset: a file in the data folder the embedded stack keeps its state in (TEMPORAL_DATA_DIR). */
export function defaultMerchantKeyStoreSetting(dataDir: string): MerchantKeyStoreSetting {
  return { kind: 'file', path: join(dataDir, 'keys', 'merchant-keys.json') };
}

/** MERCHANT_KEY_STORE's value: `file:<path>` or `postgres://…`, as AUDIT_LOG (src/audit/setting.ts parseStoreSetting). */
export function parseMerchantKeyStoreSetting(
  value: string,
): { setting: MerchantKeyStoreSetting } | { problem: string } {
  return parseStoreSetting(value, 'data/keys/merchant-keys.json');
}

/** Where MERCHANT_KEY_STORE points, for messages and logs (no password). */
export const describeMerchantKeyStoreSetting: (setting: MerchantKeyStoreSetting) => string = describeStoreSetting;
