import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  AesGcmPayloadCodec,
  createPayloadCodec,
  DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA_KEY,
  parsePayloadEncryptionKeys,
  payloadEncryptionKey,
  PayloadEncryptionError,
  PayloadKeyFormatError,
} from '../../src/security/payload-codec';

/** The codec alone: AES-256-GCM round trips, key ids, rotation, tampering and passthrough. */
const key = (id: string) => payloadEncryptionKey(id, randomBytes(32));
const toPayload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const fromPayload = (payload: Payload): unknown => defaultPayloadConverter.fromPayload(payload);
const meta = (payload: Payload, name: string) => Buffer.from(payload.metadata?.[name] ?? []).toString('utf8');

describe('AesGcmPayloadCodec', () => {
  const marker = 'Jane Customer, IBAN DE89370400440532013000';
  const value = { merchantReference: 'order-1', customer: { name: marker }, amount: 120.5 };

  it('round-trips every kind of payload, with only the encoding and the key id in clear', async () => {
    const codec = createPayloadCodec([key('k1')]);
    const originals = [toPayload(value), toPayload(undefined), toPayload(new Uint8Array([1, 2, 3])), toPayload('x')];
    const encoded = await codec.encode(originals);
    expect(encoded).toHaveLength(originals.length);
    for (const payload of encoded) {
      expect(Object.keys(payload.metadata ?? {}).sort()).toEqual(['encoding', KEY_ID_METADATA_KEY].sort());
      expect(meta(payload, 'encoding')).toBe(ENCRYPTED_ENCODING);
      expect(meta(payload, KEY_ID_METADATA_KEY)).toBe('k1');
      expect(Buffer.from(payload.data!).toString('latin1')).not.toContain('json/plain');
    }
    expect(Buffer.from(encoded[0]!.data!).toString('latin1')).not.toContain(marker);
    const decoded = await codec.decode(encoded);
    expect(decoded.map(fromPayload)).toEqual([value, undefined, new Uint8Array([1, 2, 3]), 'x']);
    expect(meta(decoded[0]!, 'encoding')).toBe('json/plain');
  });

  it('uses a fresh IV for each payload: the same value never encrypts to the same bytes', async () => {
    const codec = createPayloadCodec([key('k1')]);
    const [a, b] = await codec.encode([toPayload(value), toPayload(value)]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('encrypts with the first key; after a rotation (new key first) the old key still decrypts', async () => {
    const old = key('2025-01');
    const next = key('2026-01');
    const before = createPayloadCodec([old]);
    const written = await before.encode([toPayload(value)]);

    const rotated = createPayloadCodec([next, old]);
    expect(rotated.encryptingKeyId).toBe('2026-01');
    expect((await rotated.decode(written)).map(fromPayload)).toEqual([value]);
    const fresh = await rotated.encode([toPayload(value)]);
    expect(meta(fresh[0]!, KEY_ID_METADATA_KEY)).toBe('2026-01');
    // And a mixed batch (an old history event beside a new one) decodes in one call.
    expect((await rotated.decode([...written, ...fresh])).map(fromPayload)).toEqual([value, value]);
  });

  it('fails clearly, naming the key id, for a payload under a key it does not have', async () => {
    const written = await createPayloadCodec([key('retired-key')]).encode([toPayload(value)]);
    const codec = createPayloadCodec([key('current')]);
    const failure = await codec.decode(written).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(PayloadEncryptionError);
    expect((failure as PayloadEncryptionError).keyId).toBe('retired-key');
    expect((failure as Error).message).toMatch(/encryption key id "retired-key" is not in PAYLOAD_ENCRYPTION_KEYS/);
    expect((failure as Error).message).toContain('configured: current');
  });

  it('fails when one bit of the ciphertext, the IV or the tag changed, or the data is cut short', async () => {
    const codec = createPayloadCodec([key('k1')]);
    const [payload] = await codec.encode([toPayload(value)]);
    const data = Buffer.from(payload!.data!);
    for (const at of [0, 12, Math.floor(data.length / 2), data.length - 1]) {
      const altered = Buffer.from(data);
      altered[at] = altered[at]! ^ 0x01;
      await expect(codec.decode([{ ...payload, data: altered }])).rejects.toThrow(/key id "k1": authentication failed/);
    }
    await expect(codec.decode([{ ...payload, data: data.subarray(0, 20) }])).rejects.toThrow(/truncated/);
  });

  it('fails under a different key that carries the same id (authentication, not garbage)', async () => {
    const [payload] = await createPayloadCodec([key('same-id')]).encode([toPayload(value)]);
    await expect(createPayloadCodec([key('same-id')]).decode([payload!])).rejects.toThrow(/authentication failed/);
  });

  it('passes payloads that are not encrypted through decode unchanged (histories from before encryption)', async () => {
    const codec = createPayloadCodec([key('k1')]);
    const plain = [toPayload(value), toPayload(null), { metadata: { encoding: Buffer.from('binary/custom') } }];
    const decoded = await codec.decode(plain);
    decoded.forEach((p, i) => expect(p).toBe(plain[i]));
  });

  it('refuses an encrypted payload without a key id', async () => {
    const codec = createPayloadCodec([key('k1')]);
    const [payload] = await codec.encode([toPayload(value)]);
    const { [KEY_ID_METADATA_KEY]: _dropped, ...metadata } = payload!.metadata!;
    await expect(codec.decode([{ ...payload, metadata }])).rejects.toThrow(/has no encryption-key-id/);
  });

  it('needs at least one key, of 32 bytes, with unique ids', () => {
    expect(() => new AesGcmPayloadCodec([])).toThrow(/at least one/);
    const k = key('a');
    expect(() => new AesGcmPayloadCodec([k, k])).toThrow(/listed twice/);
    expect(() => payloadEncryptionKey('a', randomBytes(16))).toThrow(/32 bytes after base64 decoding \(got 16\)/);
  });

  it('never shows key material when a key is logged or serialised', () => {
    const secret = randomBytes(32);
    const k = payloadEncryptionKey('k1', secret);
    expect(k.key.equals(secret)).toBe(true);
    expect(JSON.stringify(k)).toBe('{"id":"k1","key":"[redacted]"}');
    expect(Object.keys(k)).toEqual(['id']);
  });
});

describe('parsePayloadEncryptionKeys', () => {
  const b64 = (bytes = 32) => randomBytes(bytes).toString('base64');

  it('reads keyId:<base64> entries in order (first encrypts), standard or URL-safe base64, spaces ignored', () => {
    const raw = randomBytes(32);
    const keys = parsePayloadEncryptionKeys(
      ` new:${raw.toString('base64url')} , old:${raw.toString('base64')},older:${b64().replace(/=+$/, '')}`,
    );
    expect(keys.map((k) => k.id)).toEqual(['new', 'old', 'older']);
    expect(keys[0]!.key.equals(raw)).toBe(true);
    expect(keys[1]!.key.equals(raw)).toBe(true);
  });

  it('parses the embedded default development key', () => {
    expect(parsePayloadEncryptionKeys(DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS)).toHaveLength(1);
  });

  it.each([
    ['', /at least one/],
    [' , ', /at least one/],
    ['nokey', /entry 1 must be keyId:<base64 of 32 bytes>/],
    [`:${'A'.repeat(44)}`, /entry 1 must be keyId/],
    ['k1:', /entry 1 must be keyId/],
    [`k1:${randomBytes(16).toString('base64')}`, /key "k1" must be 32 bytes after base64 decoding \(got 16\)/],
    ['k1:not base64!', /key "k1" is not base64/],
    [`bad id:${randomBytes(32).toString('base64')}`, /key id "bad id" must be/],
  ])('refuses %j', (value, message) => {
    expect(() => parsePayloadEncryptionKeys(value)).toThrow(PayloadKeyFormatError);
    expect(() => parsePayloadEncryptionKeys(value)).toThrow(message);
  });

  it('refuses a key id listed twice, and never echoes key material in an error', () => {
    const secret = b64();
    let message = '';
    try {
      parsePayloadEncryptionKeys(`k1:${secret},k1:${b64()}`);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/key id "k1" is listed twice/);
    expect(message).not.toContain(secret);
    const short = randomBytes(16).toString('base64');
    expect(() => parsePayloadEncryptionKeys(`k1:${short}`)).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(short) }),
    );
  });
});
