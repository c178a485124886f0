/**
 * The envelope codec (src/security/merchant-keys.ts): a data key per merchant chosen from the serialization context's
 * workflow id, wrapped by the master key in the store; old master-key payloads still decode; rotation; erasure.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter, type Payload, type SerializationContext } from '@temporalio/common';
import { FileMerchantKeyStore } from '../../src/keys/file-merchant-key-store';
import {
  merchantKeyId,
  MerchantKeyRing,
  MerchantPayloadCodec,
  parseMerchantKeyId,
  PayloadKeyErasedError,
  unwrapKey,
} from '../../src/security/merchant-keys';
import {
  AesGcmPayloadCodec,
  KEY_ID_METADATA_KEY,
  payloadEncryptionKey,
  PayloadEncryptionError,
} from '../../src/security/payload-codec';
import { merchantOfWorkflowId } from '../../src/shared/ids';

const masters = [payloadEncryptionKey('master-2', randomBytes(32)), payloadEncryptionKey('master-1', randomBytes(32))];
const toPayload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const fromPayload = (payload: Payload): unknown => defaultPayloadConverter.fromPayload(payload);
const keyIdOf = (payload: Payload) => Buffer.from(payload.metadata?.[KEY_ID_METADATA_KEY] ?? []).toString('utf8');
const workflow = (workflowId: string): SerializationContext => ({ type: 'workflow', namespace: 'default', workflowId });
const activity = (workflowId: string): SerializationContext => ({
  type: 'activity',
  namespace: 'default',
  workflowId,
  activityId: '1',
  isLocal: false,
});

describe('merchantOfWorkflowId', () => {
  it.each([
    ['finance-application:shop-a:order-1', { merchantId: 'shop-a' }],
    ['finance-application:order-1', undefined],
    ['consent-transactions:shop-a:c-42', { merchantId: 'shop-a' }],
    ['consent-late-reports:shop-b:c-42', { merchantId: 'shop-b' }],
    ['merchant-secrets:shop-a', { merchantId: 'shop-a' }],
    ['callback-ledger:shop-a', { merchantId: 'shop-a' }],
    ['callback-resend:shop-b:2026-11-27T00:00:00.000Z:2026-11-28T00:00:00.000Z', { merchantId: 'shop-b' }],
    [
      'callback-resend:shop-b:2026-11-27T00:00:00.000Z:2026-11-28T00:00:00.000Z:finance-application.status-changed',
      { merchantId: 'shop-b' },
    ],
    ['callback-redelivery:finance-application:shop-a:order-1:APPROVED', { merchantId: 'shop-a' }],
    ['callback-redelivery:finance-application:order-1:APPROVED', undefined],
    ['consent-refresh:c-42', undefined],
    ['consent-claim:c-42', undefined],
    ['consent-transactions:c-42', undefined],
    ['something-else:shop-a:x', undefined],
  ])('%s', (id, owner) => expect(merchantOfWorkflowId(id)).toEqual(owner));
});

describe('the merchant key ids', () => {
  it('round-trip, and a master key id is none', () => {
    expect(parseMerchantKeyId(merchantKeyId('shop.a_1', 3))).toEqual({ merchantId: 'shop.a_1', generation: 3 });
    expect(parseMerchantKeyId('master-1')).toBeUndefined();
    expect(parseMerchantKeyId('merchant:shop-a:0')).toBeUndefined();
    expect(parseMerchantKeyId('merchant::1')).toBeUndefined();
  });
});

describe('MerchantPayloadCodec', () => {
  let dir: string;
  let store: FileMerchantKeyStore;
  let ring: MerchantKeyRing;
  let codec: MerchantPayloadCodec;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'merchant-codec-'));
    store = new FileMerchantKeyStore(join(dir, 'merchant-keys.json'));
    ring = new MerchantKeyRing({ store, masterKeys: masters });
    codec = new MerchantPayloadCodec({ masterKeys: masters, ring });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const secret = { customer: { name: 'Jane Customer' }, amount: 12 };

  it("encrypts a merchant's payloads under its own data key, made on first use and stored wrapped", async () => {
    const [a] = await codec.encode([toPayload(secret)], workflow('finance-application:shop-a:order-1'));
    const [b] = await codec.encode([toPayload(secret)], activity('consent-transactions:shop-b:c-1'));
    expect(keyIdOf(a!)).toBe('merchant:shop-a:1');
    expect(keyIdOf(b!)).toBe('merchant:shop-b:1');
    expect((await codec.decode([a!, b!])).map(fromPayload)).toEqual([secret, secret]);
    const stored = (await store.read('shop-a'))!.keys;
    expect(stored).toEqual([
      { generation: 1, wrappedBy: 'master-2', wrapped: expect.any(String), createdAt: expect.any(String) },
    ]);
    // Another process (its own ring over the store) decodes it: the key is the stored one.
    const other = new MerchantPayloadCodec({
      masterKeys: masters,
      ring: new MerchantKeyRing({ store, masterKeys: masters }),
    });
    expect(fromPayload((await other.decode([a!]))[0]!)).toEqual(secret);
  });

  it('uses the master key without a merchant (no context, a consent refresh), and decodes master payloads', async () => {
    const [none] = await codec.encode([toPayload(secret)]);
    const [refresh] = await codec.encode([toPayload(secret)], workflow('consent-refresh:c-42'));
    expect(keyIdOf(none!)).toBe('master-2');
    expect(keyIdOf(refresh!)).toBe('master-2');
    // Written before merchant keys, under the older master: still read.
    const [old] = await new AesGcmPayloadCodec([masters[1]!]).encode([toPayload(secret)]);
    const plain = toPayload('never encrypted');
    expect((await codec.decode([none!, refresh!, old!, plain])).map(fromPayload)).toEqual([
      secret,
      secret,
      secret,
      'never encrypted',
    ]);
  });

  it('writes under the master key with encryption off (decrypt-only), and still reads merchant keys', async () => {
    const [a] = await codec.encode([toPayload(secret)], workflow('finance-application:shop-a:order-1'));
    const readOnly = new MerchantPayloadCodec({ masterKeys: masters, ring, encrypt: false });
    const [written] = await readOnly.encode([toPayload(secret)], workflow('finance-application:shop-a:order-2'));
    expect(keyIdOf(written!)).toBe('master-2');
    expect(fromPayload((await readOnly.decode([a!]))[0]!)).toEqual(secret);
  });

  it("an old build's codec refuses a merchant-key payload naming its key id", async () => {
    const [a] = await codec.encode([toPayload(secret)], workflow('finance-application:shop-a:order-1'));
    await expect(new AesGcmPayloadCodec(masters).decode([a!])).rejects.toThrow(
      /key id "merchant:shop-a:1" is not in PAYLOAD_ENCRYPTION_KEYS/,
    );
  });

  it('rotates per merchant: the new generation encrypts, the old one still decrypts', async () => {
    const context = workflow('finance-application:shop-a:order-1');
    const [before] = await codec.encode([toPayload(1)], context);
    // Rotated by another process (the tool): this ring sees it once its cache expires or a payload names it.
    const tool = new MerchantKeyRing({ store, masterKeys: masters });
    expect(await tool.rotate('shop-a')).toBe(2);
    ring.forget();
    const [after] = await codec.encode([toPayload(2)], context);
    expect([keyIdOf(before!), keyIdOf(after!)]).toEqual(['merchant:shop-a:1', 'merchant:shop-a:2']);
    expect((await codec.decode([before!, after!])).map(fromPayload)).toEqual([1, 2]);
  });

  it("erases one merchant: its payloads fail with a clear error, everywhere; another merchant's still decode", async () => {
    const [a] = await codec.encode([toPayload(secret)], workflow('finance-application:shop-a:order-1'));
    const [b] = await codec.encode([toPayload(secret)], workflow('finance-application:shop-b:order-1'));
    const record = await ring.erase('shop-a', 'ops');
    expect(record.erasure).toEqual({ at: expect.any(String), by: 'ops' });
    const message = `payload key of merchant shop-a was erased on ${record.erasure!.at}`;
    await expect(codec.decode([a!])).rejects.toThrow(message);
    await expect(codec.decode([a!])).rejects.toBeInstanceOf(PayloadKeyErasedError);
    await expect(codec.decode([a!])).rejects.toBeInstanceOf(PayloadEncryptionError);
    // A process that never saw the merchant, and nothing new is written for it.
    const fresh = new MerchantPayloadCodec({
      masterKeys: masters,
      ring: new MerchantKeyRing({ store, masterKeys: masters }),
    });
    await expect(fresh.decode([a!])).rejects.toThrow(message);
    await expect(codec.encode([toPayload(1)], workflow('finance-application:shop-a:order-2'))).rejects.toThrow(message);
    expect(fromPayload((await codec.decode([b!]))[0]!)).toEqual(secret);
    expect(fromPayload((await fresh.decode([b!]))[0]!)).toEqual(secret);
  });

  it('a process that cached the key forgets it after MERCHANT_KEY_CACHE_TTL', async () => {
    let now = Date.parse('2026-12-01T10:00:00Z');
    const cachedRing = new MerchantKeyRing({
      store,
      masterKeys: masters,
      cacheTtlMs: 60_000,
      now: () => new Date(now),
    });
    const cached = new MerchantPayloadCodec({ masterKeys: masters, ring: cachedRing });
    const [a] = await cached.encode([toPayload(1)], workflow('merchant-secrets:shop-a'));
    await new MerchantKeyRing({ store, masterKeys: masters }).erase('shop-a', 'ops');
    expect(fromPayload((await cached.decode([a!]))[0]!)).toBe(1);
    now += 60_000;
    await expect(cached.decode([a!])).rejects.toBeInstanceOf(PayloadKeyErasedError);
  });

  it('binds a wrapped key to its merchant and generation, and needs its master key', async () => {
    await codec.encode([toPayload(1)], workflow('finance-application:shop-a:order-1'));
    const [wrapped] = (await store.read('shop-a'))!.keys;
    const byId = new Map(masters.map((k) => [k.id, k.key]));
    expect(unwrapKey(byId, 'shop-a', wrapped!)).toHaveLength(32);
    expect(() => unwrapKey(byId, 'shop-b', wrapped!)).toThrow(/authentication failed/);
    expect(() => unwrapKey(byId, 'shop-a', { ...wrapped!, generation: 2 })).toThrow(/authentication failed/);
    expect(() => unwrapKey(new Map([['master-1', masters[1]!.key]]), 'shop-a', wrapped!)).toThrow(
      /wrapped by master key "master-2", which is not in PAYLOAD_ENCRYPTION_KEYS/,
    );
  });
});
