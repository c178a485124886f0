/** The embedded stack's merchant key store (src/keys/file-merchant-key-store.ts): wrapped keys only, atomic, erasure. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileMerchantKeyStore } from '../../src/keys/file-merchant-key-store';
import { openMerchantKeyStore } from '../../src/keys/open';
import { newWrappedKey } from '../../src/security/merchant-keys';
import { payloadEncryptionKey } from '../../src/security/payload-codec';

const master = payloadEncryptionKey('master-1', randomBytes(32));
const wrapped = (merchantId: string, generation: number) =>
  newWrappedKey(master, merchantId, generation, new Date('2026-12-01T10:00:00Z'));

describe('the merchant key file', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'merchant-keys-'));
    file = join(dir, 'keys', 'merchant-keys.json');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps wrapped keys per merchant in an owner-only folder and file, never a key in clear', async () => {
    const store = await openMerchantKeyStore({ kind: 'file', path: file });
    expect(await store.read('shop-a')).toBeUndefined();
    const a1 = wrapped('shop-a', 1);
    await store.addKey('shop-a', a1.wrapped);
    await store.addKey('shop-a', wrapped('shop-a', 2).wrapped);
    await store.addKey('shop-b', wrapped('shop-b', 1).wrapped);
    expect((await store.read('shop-a'))!.keys.map((k) => k.generation)).toEqual([1, 2]);
    expect((await store.list()).map((r) => r.merchantId)).toEqual(['shop-a', 'shop-b']);
    expect(statSync(join(dir, 'keys')).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain(a1.wrapped.wrapped);
    expect(text).not.toContain(a1.key.toString('base64'));
    // Another process (a second store on the file) reads the same.
    expect((await new FileMerchantKeyStore(file).read('shop-b'))!.keys).toHaveLength(1);
    await store.close();
  });

  it('keeps the first key of a generation when two writers race for it', async () => {
    const one = new FileMerchantKeyStore(file);
    const two = new FileMerchantKeyStore(file);
    const [x, y] = [wrapped('shop-a', 1), wrapped('shop-a', 1)];
    const [rx, ry] = await Promise.all([one.addKey('shop-a', x.wrapped), two.addKey('shop-a', y.wrapped)]);
    expect(rx.keys).toHaveLength(1);
    expect(ry.keys).toEqual(rx.keys);
    expect([x.wrapped.wrapped, y.wrapped.wrapped]).toContain(rx.keys[0]!.wrapped);
  });

  it('erases a merchant: its keys leave the file, when and by whom stay, and no key is added again', async () => {
    const store = new FileMerchantKeyStore(file);
    const a = wrapped('shop-a', 1);
    await store.addKey('shop-a', a.wrapped);
    await store.addKey('shop-b', wrapped('shop-b', 1).wrapped);
    const erased = await store.erase('shop-a', 'ops');
    expect(erased).toEqual({ merchantId: 'shop-a', keys: [], erasure: { at: expect.any(String), by: 'ops' } });
    expect(readFileSync(file, 'utf8')).not.toContain(a.wrapped.wrapped);
    // Idempotent: the first erasure's time stays.
    expect((await store.erase('shop-a', 'someone-else')).erasure).toEqual(erased.erasure);
    expect((await store.addKey('shop-a', wrapped('shop-a', 2).wrapped)).keys).toEqual([]);
    expect((await store.read('shop-a'))!.erasure!.by).toBe('ops');
    expect((await store.read('shop-b'))!.keys).toHaveLength(1);
    // A merchant never heard of can be erased too (nothing to destroy; it can never get a key).
    expect((await store.erase('shop-c', 'ops')).erasure).toBeDefined();
  });

  it('treats a merchant named __proto__ as any other', async () => {
    const store = new FileMerchantKeyStore(file);
    await store.addKey('__proto__', wrapped('__proto__', 1).wrapped);
    expect((await new FileMerchantKeyStore(file).read('__proto__'))!.keys).toHaveLength(1);
    expect(await store.read('constructor')).toBeUndefined();
  });

  it('refuses a damaged file rather than starting without its keys', async () => {
    await new FileMerchantKeyStore(file).addKey('shop-a', wrapped('shop-a', 1).wrapped);
    writeFileSync(file, '{"version":1,"merchants":{"shop-a":');
    await expect(openMerchantKeyStore({ kind: 'file', path: file })).rejects.toThrow(/is not JSON/);
    writeFileSync(file, '{"version":2,"merchants":{}}');
    await expect(new FileMerchantKeyStore(file).read('shop-a')).rejects.toThrow(
      /not a merchant key store of version 1/,
    );
  });
});
