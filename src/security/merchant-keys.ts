import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { merchantOfWorkflowId, MERCHANT_ID_PATTERN } from '../shared/ids';
import {
  AesGcmPayloadCodec,
  encryptionKeyIdOf,
  isEncryptedPayload,
  openPayload,
  PayloadEncryptionError,
  sealPayload,
  type PayloadEncryptionKey,
} from './payload-codec';

/**
 * A data key per merchant, so that a merchant's payloads can be made unreadable by destroying its keys
 * (crypto-shredding; docs/decisions/0048-per-merchant-payload-keys.md, docs/security.md#a-payload-key-per-merchant).
 *
 * Envelope encryption: each merchant's data keys are random, stored only wrapped (AES-256-GCM) by a master key of
 * PAYLOAD_ENCRYPTION_KEYS in a key store (MERCHANT_KEY_STORE: src/keys/), and kept unwrapped in the process for
 * MERCHANT_KEY_CACHE_TTL. A payload names its data key as `merchant:<merchantId>:<generation>` in the same
 * `encryption-key-id` metadata a master key id goes in (master ids cannot hold a `:`), so decoding needs no context,
 * and a build without this module refuses such a payload naming its key id instead of misreading it.
 */

const CIPHER = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MERCHANT_KEY_PREFIX = 'merchant:';

/** The key id of a merchant's data key, as payloads carry it. */
export const merchantKeyId = (merchantId: string, generation: number): string =>
  `${MERCHANT_KEY_PREFIX}${merchantId}:${generation}`;

/** The merchant and generation a payload's key id names, or undefined for a master key's id. */
export function parseMerchantKeyId(keyId: string): { merchantId: string; generation: number } | undefined {
  if (!keyId.startsWith(MERCHANT_KEY_PREFIX)) return undefined;
  const rest = keyId.slice(MERCHANT_KEY_PREFIX.length);
  const colon = rest.lastIndexOf(':');
  const merchantId = rest.slice(0, colon);
  const generation = Number(rest.slice(colon + 1));
  if (colon <= 0 || !MERCHANT_ID_PATTERN.test(merchantId) || !Number.isSafeInteger(generation) || generation < 1)
    return undefined;
  return { merchantId, generation };
}

/** One data key as a store keeps it: never in clear. */
export interface WrappedMerchantKey {
  /** 1, 2, 3…: the newest encrypts, every one decrypts. */
  generation: number;
  /** The id of the master key (PAYLOAD_ENCRYPTION_KEYS) that wrapped it: it must stay listed to unwrap it. */
  wrappedBy: string;
  /** base64 of IV ‖ ciphertext ‖ tag; the additional data binds it to its merchant and generation. */
  wrapped: string;
  /** ISO 8601 UTC. */
  createdAt: string;
}

/** What a store holds of one merchant: its wrapped keys, or, once erased, only when and by whom. */
export interface MerchantKeyRecord {
  merchantId: string;
  /** By generation, ascending; empty once erased. */
  keys: WrappedMerchantKey[];
  erasure?: { at: string; by: string };
}

/**
 * Where wrapped keys are kept (src/keys/: a file, PostgreSQL). Writes are atomic: a concurrent writer's key of the
 * same generation wins and is returned; an erased merchant never gets a key again.
 */
export interface MerchantKeyStore {
  /** A path, or a database's host and name (never a password). */
  readonly location: string;
  read(merchantId: string): Promise<MerchantKeyRecord | undefined>;
  /** Adds `key` unless that generation exists or the merchant is erased; resolves the record as it then is. */
  addKey(merchantId: string, key: WrappedMerchantKey): Promise<MerchantKeyRecord>;
  /** Destroys every key of the merchant and keeps only the erasure's time and actor; idempotent (the first stays). */
  erase(merchantId: string, by: string): Promise<MerchantKeyRecord>;
  list(): Promise<MerchantKeyRecord[]>;
  close(): Promise<void>;
}

/** A payload under a key of an erased merchant: it cannot be read again by anyone. */
export class PayloadKeyErasedError extends PayloadEncryptionError {
  override name = 'PayloadKeyErasedError';
  constructor(
    readonly merchantId: string,
    readonly erasedAt: string,
    keyId?: string,
  ) {
    super(
      `payload key of merchant ${merchantId} was erased on ${erasedAt}: its payloads cannot be decoded ` +
        '(docs/operations.md#erasing-a-merchant)',
      keyId,
    );
  }
}

const wrapAad = (merchantId: string, generation: number): Buffer =>
  Buffer.from(`paylater merchant data key v1\0${merchantId}\0${generation}`, 'utf8');

/** A new random data key for the merchant, wrapped by `master`; the key itself is returned beside it. */
export function newWrappedKey(
  master: PayloadEncryptionKey,
  merchantId: string,
  generation: number,
  now: Date,
): { wrapped: WrappedMerchantKey; key: Buffer } {
  const key = randomBytes(KEY_BYTES);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, master.key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(wrapAad(merchantId, generation));
  const sealed = Buffer.concat([iv, cipher.update(key), cipher.final(), cipher.getAuthTag()]);
  return {
    key,
    wrapped: { generation, wrappedBy: master.id, wrapped: sealed.toString('base64'), createdAt: now.toISOString() },
  };
}

/** The data key inside `wrapped`, with the master key it names; PayloadEncryptionError when it cannot be had. */
export function unwrapKey(
  masters: ReadonlyMap<string, Buffer>,
  merchantId: string,
  wrapped: WrappedMerchantKey,
): Buffer {
  const keyId = merchantKeyId(merchantId, wrapped.generation);
  const master = masters.get(wrapped.wrappedBy);
  if (!master)
    throw new PayloadEncryptionError(
      `Cannot unwrap ${keyId}: it is wrapped by master key "${wrapped.wrappedBy}", which is not in ` +
        'PAYLOAD_ENCRYPTION_KEYS (keep a master key listed while a merchant key it wrapped is in use)',
      keyId,
    );
  const data = Buffer.from(wrapped.wrapped, 'base64');
  try {
    const decipher = createDecipheriv(CIPHER, master, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(wrapAad(merchantId, wrapped.generation));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const key = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    if (key.length !== KEY_BYTES) throw new Error('length');
    return key;
  } catch {
    throw new PayloadEncryptionError(
      `Cannot unwrap ${keyId} with master key "${wrapped.wrappedBy}": authentication failed (altered, moved to ` +
        'another merchant or generation, or another key under that id)',
      keyId,
    );
  }
}

interface CachedMerchant {
  keys: Map<number, Buffer>;
  newest?: number;
  erasure?: { at: string; by: string };
  fetchedAt: number;
}

export interface MerchantKeyRingOptions {
  store: MerchantKeyStore;
  /** PAYLOAD_ENCRYPTION_KEYS: the first wraps new data keys, every one unwraps. */
  masterKeys: readonly PayloadEncryptionKey[];
  /** How long an unwrapped key (or an erasure) is believed without reading the store again; default 60 s. */
  cacheTtlMs?: number;
  now?: () => Date;
}

/** The merchants' data keys of one process: read from the store, unwrapped and cached for cacheTtlMs. */
export class MerchantKeyRing {
  readonly store: MerchantKeyStore;
  private readonly masters: ReadonlyMap<string, Buffer>;
  private readonly wrapping: PayloadEncryptionKey;
  private readonly ttl: number;
  private readonly now: () => Date;
  private readonly cache = new Map<string, CachedMerchant>();
  private readonly loading = new Map<string, Promise<CachedMerchant>>();

  constructor(options: MerchantKeyRingOptions) {
    const [first] = options.masterKeys;
    if (!first) throw new PayloadEncryptionError('at least one master key is required to wrap merchant keys');
    this.store = options.store;
    this.wrapping = first;
    this.masters = new Map(options.masterKeys.map((k) => [k.id, k.key]));
    this.ttl = options.cacheTtlMs ?? 60_000;
    this.now = options.now ?? (() => new Date());
  }

  /** The key new payloads of the merchant are encrypted with; its first key is made now when it has none. */
  async encryptionKey(merchantId: string): Promise<{ keyId: string; key: Buffer }> {
    let entry = await this.entry(merchantId);
    if (entry.erasure) throw new PayloadKeyErasedError(merchantId, entry.erasure.at);
    if (entry.newest === undefined) entry = await this.add(merchantId, 1);
    if (entry.erasure) throw new PayloadKeyErasedError(merchantId, entry.erasure.at);
    const generation = entry.newest!;
    return { keyId: merchantKeyId(merchantId, generation), key: entry.keys.get(generation)! };
  }

  /** The key of one generation; PayloadKeyErasedError once the merchant is erased. */
  async decryptionKey(merchantId: string, generation: number): Promise<Buffer> {
    let entry = await this.entry(merchantId);
    // A generation another process made after our read: read again once.
    if (!entry.erasure && !entry.keys.has(generation)) entry = await this.entry(merchantId, true);
    const keyId = merchantKeyId(merchantId, generation);
    if (entry.erasure) throw new PayloadKeyErasedError(merchantId, entry.erasure.at, keyId);
    const key = entry.keys.get(generation);
    if (!key)
      throw new PayloadEncryptionError(
        `Cannot decrypt payload: ${keyId} is not in the merchant key store (${this.store.location})`,
        keyId,
      );
    return key;
  }

  /** A new generation for the merchant (a rotation): new payloads use it, older ones keep their own key. */
  async rotate(merchantId: string): Promise<number> {
    const entry = await this.entry(merchantId, true);
    if (entry.erasure) throw new PayloadKeyErasedError(merchantId, entry.erasure.at);
    const next = await this.add(merchantId, (entry.newest ?? 0) + 1);
    return next.newest!;
  }

  /** Destroys the merchant's keys in the store and in this process. */
  async erase(merchantId: string, by: string): Promise<MerchantKeyRecord> {
    this.forget(merchantId);
    const record = await this.store.erase(merchantId, by);
    this.forget(merchantId);
    return record;
  }

  /** Drops what this process holds of a merchant (or of every one): the next use reads the store. */
  forget(merchantId?: string): void {
    if (merchantId === undefined) this.cache.clear();
    else this.cache.delete(merchantId);
  }

  private async add(merchantId: string, generation: number): Promise<CachedMerchant> {
    const { wrapped } = newWrappedKey(this.wrapping, merchantId, generation, this.now());
    const record = await this.store.addKey(merchantId, wrapped);
    return this.remember(record);
  }

  private entry(merchantId: string, fresh = false): Promise<CachedMerchant> {
    const cached = this.cache.get(merchantId);
    if (!fresh && cached && this.now().getTime() - cached.fetchedAt < this.ttl) return Promise.resolve(cached);
    const pending = this.loading.get(merchantId);
    if (pending) return pending;
    const load = this.store
      .read(merchantId)
      .then((record) => this.remember(record ?? { merchantId, keys: [] }))
      .finally(() => this.loading.delete(merchantId));
    this.loading.set(merchantId, load);
    return load;
  }

  private remember(record: MerchantKeyRecord): CachedMerchant {
    const keys = new Map<number, Buffer>();
    if (!record.erasure)
      for (const wrapped of record.keys)
        keys.set(wrapped.generation, unwrapKey(this.masters, record.merchantId, wrapped));
    const generations = [...keys.keys()];
    const entry: CachedMerchant = {
      keys,
      newest: generations.length ? Math.max(...generations) : undefined,
      erasure: record.erasure,
      fetchedAt: this.now().getTime(),
    };
    this.cache.set(record.merchantId, entry);
    return entry;
  }
}

export interface MerchantPayloadCodecOptions {
  /** PAYLOAD_ENCRYPTION_KEYS: payloads of no merchant, and every payload written before merchant keys. */
  masterKeys: readonly PayloadEncryptionKey[];
  ring: MerchantKeyRing;
  /** false (MERCHANT_KEY_ENCRYPTION=decrypt-only): read merchant keys, write under the master key (a rollout). */
  encrypt?: boolean;
}

/**
 * The payload codec with a key per merchant. Encoding: the merchant is the one the SDK's serialization context
 * names through its workflow id (merchantOfWorkflowId); without a merchant (no context, a consent's refresh or
 * claim) the master key encrypts, as AesGcmPayloadCodec does. Decoding needs no context: the key id says which key.
 */
export class MerchantPayloadCodec implements PayloadCodec {
  private readonly master: AesGcmPayloadCodec;
  private readonly ring: MerchantKeyRing;
  private readonly encrypting: boolean;

  constructor(options: MerchantPayloadCodecOptions) {
    this.master = new AesGcmPayloadCodec(options.masterKeys);
    this.ring = options.ring;
    this.encrypting = options.encrypt ?? true;
  }

  /** The master key's id (payloads of no merchant). */
  get encryptingKeyId(): string {
    return this.master.encryptingKeyId;
  }

  /** The merchant whose key encrypts the payloads of this context, if any. */
  merchantOf(context: SerializationContext | undefined): string | undefined {
    const workflowId = context?.workflowId;
    if (workflowId === undefined) return undefined;
    return merchantOfWorkflowId(workflowId)?.merchantId;
  }

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const merchantId = this.encrypting ? this.merchantOf(context) : undefined;
    if (merchantId === undefined) return this.master.encode(payloads);
    const { keyId, key } = await this.ring.encryptionKey(merchantId);
    const idBytes = Buffer.from(keyId, 'utf8');
    return payloads.map((payload) => sealPayload(payload, idBytes, key));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const decoded: Payload[] = [];
    for (const payload of payloads) {
      const named = isEncryptedPayload(payload) ? parseMerchantKeyId(encryptionKeyIdOf(payload)) : undefined;
      if (!named) {
        decoded.push(...(await this.master.decode([payload])));
        continue;
      }
      const keyId = merchantKeyId(named.merchantId, named.generation);
      decoded.push(openPayload(payload, keyId, await this.ring.decryptionKey(named.merchantId, named.generation)));
    }
    return decoded;
  }
}
