import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * Customer data encrypted in Temporal (docs/decisions/0028-payload-encryption.md): a PayloadCodec that encrypts every
 * payload with AES-256-GCM before it leaves the process, so histories, memos, summaries and failure attributes hold
 * only ciphertext. Model: temporalio/samples-typescript `encryption`.
 *
 * Wire format, the one the Go and Python samples use (so their codec servers can read ours): metadata
 * `encoding: binary/encrypted` and `encryption-key-id: <id>`; data = 12-byte random IV ‖ ciphertext ‖ 16-byte tag,
 * where the plaintext is the whole original Payload message (its metadata included) in protobuf binary.
 *
 * Keys: the first encrypts, every one decrypts (PAYLOAD_ENCRYPTION_KEYS; rotation = put a new key first).
 * Payloads that are not encrypted pass through decode unchanged: histories written before encryption replay.
 */

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA_KEY = 'encryption-key-id';
const CIPHER = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key id: safe to show (it travels in clear in every payload's metadata), never the key itself. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}$/;

export interface PayloadEncryptionKey {
  readonly id: string;
  /** 32 bytes. Not enumerable and not serialised: a logged config or key never shows it. */
  readonly key: Buffer;
}

export function payloadEncryptionKey(id: string, key: Buffer): PayloadEncryptionKey {
  if (!KEY_ID_PATTERN.test(id)) {
    throw new PayloadKeyFormatError(`key id "${id}" must be 1-64 letters, digits, ".", "_" or "-"`);
  }
  if (key.length !== KEY_BYTES) {
    throw new PayloadKeyFormatError(`key "${id}" must be ${KEY_BYTES} bytes after base64 decoding (got ${key.length})`);
  }
  const entry = { id } as PayloadEncryptionKey;
  Object.defineProperty(entry, 'key', { value: Buffer.from(key), enumerable: false });
  Object.defineProperty(entry, 'toJSON', { value: () => ({ id, key: '[redacted]' }), enumerable: false });
  return Object.freeze(entry);
}

/** A malformed PAYLOAD_ENCRYPTION_KEYS value; the message never contains key material. */
export class PayloadKeyFormatError extends Error {
  override name = 'PayloadKeyFormatError';
}

/**
 * Parses `keyId:<base64 of 32 bytes>,keyId:<base64>,…` (standard or URL-safe base64, padding optional; spaces
 * around entries ignored). Throws PayloadKeyFormatError naming the entry, never echoing a key.
 */
export function parsePayloadEncryptionKeys(value: string): PayloadEncryptionKey[] {
  const entries = value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) throw new PayloadKeyFormatError('must list at least one keyId:<base64 of 32 bytes>');
  const keys: PayloadEncryptionKey[] = [];
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(':');
    if (colon <= 0 || colon === entry.length - 1) {
      throw new PayloadKeyFormatError(`entry ${index + 1} must be keyId:<base64 of 32 bytes>`);
    }
    const id = entry.slice(0, colon).trim();
    const encoded = entry.slice(colon + 1).trim();
    if (!BASE64.test(encoded)) throw new PayloadKeyFormatError(`key "${id}" is not base64`);
    const key = payloadEncryptionKey(id, Buffer.from(encoded, 'base64'));
    if (keys.some((k) => k.id === id)) throw new PayloadKeyFormatError(`key id "${id}" is listed twice`);
    keys.push(key);
  });
  return keys;
}

/**
 * The embedded default's key when PAYLOAD_ENCRYPTION_KEYS is unset (`npm start` with the bank sandbox). It is
 * PUBLIC (it is in this file): it only keeps the embedded stack's payloads in the same shape as production's.
 * Fixed, so the embedded server's SQLite histories still decode after a restart. Never used with a real bank.
 */
export const DEVELOPMENT_PAYLOAD_KEY_ID = 'development-only-not-secret';
export const DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS = `${DEVELOPMENT_PAYLOAD_KEY_ID}:2xZzGvta06h2Sn7ZhdDNhuMlg35x7W34qEnTc5frFSE=`;

/** A payload that cannot be decrypted (unknown key id, altered or truncated data) or keys that cannot be used. */
export class PayloadEncryptionError extends Error {
  override name = 'PayloadEncryptionError';
  constructor(
    message: string,
    /** The key id named by the payload, when it names one. */
    readonly keyId?: string,
  ) {
    super(message);
  }
}

const utf8 = new TextDecoder();
const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes === null || bytes === undefined ? undefined : utf8.decode(bytes);

export function isEncryptedPayload(payload: Payload): boolean {
  return text(payload.metadata?.[METADATA_ENCODING_KEY]) === ENCRYPTED_ENCODING;
}

/** AES-256-GCM over whole payloads; the first key encrypts, every key decrypts. */
export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly current: { id: string; key: Buffer; idBytes: Uint8Array };

  constructor(keys: readonly PayloadEncryptionKey[]) {
    const [first] = keys;
    if (!first) throw new PayloadEncryptionError('at least one payload encryption key is required');
    const map = new Map<string, Buffer>();
    for (const { id, key } of keys) {
      if (map.has(id)) throw new PayloadEncryptionError(`key id "${id}" is listed twice`);
      if (key.length !== KEY_BYTES) throw new PayloadEncryptionError(`key "${id}" must be ${KEY_BYTES} bytes`);
      map.set(id, key);
    }
    this.keys = map;
    this.current = { id: first.id, key: first.key, idBytes: Buffer.from(first.id, 'utf8') };
  }

  /** The id of the key new payloads are encrypted with. */
  get encryptingKeyId(): string {
    return this.current.id;
  }

  /** Every id this codec decrypts, the encrypting one first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  // Synchronous node:crypto work; a throw inside the executor becomes the rejection.
  encode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) => resolve(payloads.map((payload) => this.encrypt(payload))));
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) => resolve(payloads.map((payload) => this.decrypt(payload))));
  }

  private encrypt(payload: Payload): Payload {
    return sealPayload(payload, this.current.idBytes, this.current.key);
  }

  private decrypt(payload: Payload): Payload {
    if (!isEncryptedPayload(payload)) return payload;
    const keyId = encryptionKeyIdOf(payload);
    const key = this.keys.get(keyId);
    if (!key) {
      throw new PayloadEncryptionError(
        `Cannot decrypt payload: encryption key id "${keyId}" is not in PAYLOAD_ENCRYPTION_KEYS ` +
          `(configured: ${this.keyIds.join(', ')}). Add that key (after the current one) to read it.`,
        keyId,
      );
    }
    return openPayload(payload, keyId, key);
  }
}

/** The key id an encrypted payload names; PayloadEncryptionError when it names none. */
export function encryptionKeyIdOf(payload: Payload): string {
  const keyId = text(payload.metadata?.[KEY_ID_METADATA_KEY]);
  if (keyId === undefined) {
    throw new PayloadEncryptionError(
      `Cannot decrypt a ${ENCRYPTED_ENCODING} payload: it has no ${KEY_ID_METADATA_KEY}`,
    );
  }
  return keyId;
}

/** The whole payload encrypted under `key` (32 bytes), named by `keyIdBytes` (the id in UTF-8) in its metadata. */
export function sealPayload(payload: Payload, keyIdBytes: Uint8Array, key: Buffer): Payload {
  const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, key, iv, { authTagLength: TAG_BYTES });
  const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return {
    metadata: {
      [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING, 'utf8'),
      [KEY_ID_METADATA_KEY]: keyIdBytes,
    },
    data,
  };
}

/** The payload sealPayload encrypted under `key`, which the payload names as `keyId`. */
export function openPayload(payload: Payload, keyId: string, key: Buffer): Payload {
  const data = payload.data ?? new Uint8Array();
  if (data.length < IV_BYTES + TAG_BYTES) {
    throw new PayloadEncryptionError(`Cannot decrypt payload with key id "${keyId}": data is truncated`, keyId);
  }
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv(CIPHER, key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    plaintext = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new PayloadEncryptionError(
      `Cannot decrypt payload with key id "${keyId}": authentication failed (altered data, or another key under that id)`,
      keyId,
    );
  }
  try {
    return temporal.api.common.v1.Payload.decode(plaintext);
  } catch (err) {
    throw new PayloadEncryptionError(
      `Payload decrypted with key id "${keyId}" is not a Temporal payload: ${(err as Error).message}`,
      keyId,
    );
  }
}

/** The codec for a configured key list (config.payloadEncryption.keys). */
export function createPayloadCodec(keys: readonly PayloadEncryptionKey[]): AesGcmPayloadCodec {
  return new AesGcmPayloadCodec(keys);
}
