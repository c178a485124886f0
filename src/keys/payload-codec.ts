import type { Config } from '../config';
import { MerchantKeyRing, MerchantPayloadCodec, type MerchantKeyStore } from '../security/merchant-keys';
import { openMerchantKeyStore } from './open';
import { describeMerchantKeyStoreSetting, MERCHANT_KEY_STORE } from './setting';

/** A process's payload codec with a key per merchant, its key ring and the store under both. */
export interface MerchantPayloadKeys {
  codec: MerchantPayloadCodec;
  ring: MerchantKeyRing;
  store: MerchantKeyStore;
  close(): Promise<void>;
}

/**
 * The payload codec of every process (docs/decisions/0048-per-merchant-payload-keys.md): the master keys of
 * PAYLOAD_ENCRYPTION_KEYS, the store of MERCHANT_KEY_STORE (opened now: a store that cannot be reached stops start-up
 * with an Error naming MERCHANT_KEY_STORE), MERCHANT_KEY_ENCRYPTION and MERCHANT_KEY_CACHE_TTL.
 */
export async function openMerchantPayloadKeys(
  config: Pick<Config, 'payloadEncryption' | 'merchantKeys' | 'merchants'>,
): Promise<MerchantPayloadKeys> {
  let store: MerchantKeyStore;
  try {
    store = await openMerchantKeyStore(config.merchantKeys.store);
  } catch (err) {
    throw new Error(
      `${MERCHANT_KEY_STORE} (${describeMerchantKeyStoreSetting(config.merchantKeys.store)}) cannot be opened: ` +
        (err as Error).message,
    );
  }
  const ring = new MerchantKeyRing({
    store,
    masterKeys: config.payloadEncryption.keys,
    cacheTtlMs: config.merchantKeys.cacheTtlMs,
  });
  const codec = new MerchantPayloadCodec({
    masterKeys: config.payloadEncryption.keys,
    ring,
    encrypt: config.merchantKeys.encrypt,
  });
  return { codec, ring, store, close: () => store.close() };
}
