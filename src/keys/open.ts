import type { MerchantKeyStore } from '../security/merchant-keys';
import { FileMerchantKeyStore } from './file-merchant-key-store';
import { PostgresStore } from '../audit/postgres-store';
import { PostgresMerchantKeyStore } from './postgres-merchant-key-store';
import type { MerchantKeyStoreSetting } from './setting';

/**
 * The merchant key store MERCHANT_KEY_STORE names, ready to use: a file's folder made, PostgreSQL's tables made, so
 * a process that cannot reach its keys does not start.
 */
export async function openMerchantKeyStore(setting: MerchantKeyStoreSetting): Promise<MerchantKeyStore> {
  if (setting.kind === 'file') {
    const store = new FileMerchantKeyStore(setting.path);
    await store.ready();
    return store;
  }
  return PostgresStore.opened(new PostgresMerchantKeyStore(setting.url));
}
