import { join } from 'node:path';
import { describeUrl } from '../audit/setting';

/** MERCHANT_KEY_STORE's variable name: problems and start-up failures name it. */
export const MERCHANT_KEY_STORE = 'MERCHANT_KEY_STORE';

/** Where the merchants' wrapped payload keys are kept: a file (one machine), or PostgreSQL (several processes). */
export type MerchantKeyStoreSetting = { kind: 'file'; path: string } | { kind: 'postgres'; url: string };

/** MERCHANT_KEY_STORE unset: a file in the data folder the embedded stack keeps its state in (TEMPORAL_DATA_DIR). */
export function defaultMerchantKeyStoreSetting(dataDir: string): MerchantKeyStoreSetting {
  return { kind: 'file', path: join(dataDir, 'keys', 'merchant-keys.json') };
}

/**
 * MERCHANT_KEY_STORE's value: `file:<path>` (relative to the working directory) or `postgres://…`, as AUDIT_LOG
 * (src/audit/setting.ts). The problem never repeats a postgres URL (it may hold a password).
 */
export function parseMerchantKeyStoreSetting(
  value: string,
): { setting: MerchantKeyStoreSetting } | { problem: string } {
  const v = value.trim();
  if (v.startsWith('file:')) {
    const path = v.slice('file:'.length);
    if (path === '' || path.endsWith('/'))
      return { problem: 'file: needs the path of a file, e.g. file:data/keys/merchant-keys.json' };
    return { setting: { kind: 'file', path } };
  }
  if (/^postgres(ql)?:\/\//i.test(v)) {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      return { problem: 'is not a valid postgres:// URL (the value is not shown: it may hold a password)' };
    }
    if (url.hostname === '' || url.pathname.length <= 1)
      return { problem: 'a postgres:// URL needs a host and a database: postgres://user:password@host:5432/database' };
    return { setting: { kind: 'postgres', url: v } };
  }
  return { problem: 'must be file:<path> or postgres://user:password@host:5432/database' };
}

/** Where a setting points, for messages and logs (no password). */
export function describeMerchantKeyStoreSetting(setting: MerchantKeyStoreSetting): string {
  return setting.kind === 'file' ? `file ${setting.path}` : describeUrl(setting.url);
}
