/**
 * The merchant key store in PostgreSQL (src/keys/postgres-merchant-key-store.ts) against a real server, started as the
 * audit trail's test starts one (tools/cluster/postgres.ts): two stores (two processes) race for a generation and one
 * key wins; an erasure deletes the rows and no key is added after it; the envelope codec reads through it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { defaultPayloadConverter, type SerializationContext } from '@temporalio/common';
import { startPostgres, type Postgres } from '../../tools/cluster/postgres';
import { freePort } from '../../tools/harness/processes';
import { PostgresMerchantKeyStore } from '../../src/keys/postgres-merchant-key-store';
import { MerchantKeyRing, MerchantPayloadCodec, newWrappedKey } from '../../src/security/merchant-keys';
import { payloadEncryptionKey } from '../../src/security/payload-codec';
import { describeWithPostgres, findPostgresBinDir } from '../helpers/postgres-binaries';

jest.setTimeout(120_000);

const master = payloadEncryptionKey('master-1', randomBytes(32));
const wrapped = (merchantId: string, generation: number) =>
  newWrappedKey(master, merchantId, generation, new Date()).wrapped;

describeWithPostgres('the merchant key store in PostgreSQL')('the merchant key store in PostgreSQL', () => {
  let pg: Postgres;
  let logDir: string;
  let url: string;
  const open: PostgresMerchantKeyStore[] = [];
  const store = () => {
    const s = new PostgresMerchantKeyStore(url);
    open.push(s);
    return s;
  };

  beforeAll(async () => {
    const binDir = findPostgresBinDir();
    if (!binDir) throw new Error('PAYLATER_REQUIRE_TOOLS is set and PostgreSQL is not installed');
    logDir = mkdtempSync(join(tmpdir(), 'merchant-keys-pg-log-'));
    const password = randomBytes(18).toString('base64url');
    pg = await startPostgres({
      binDir,
      port: await freePort(),
      user: 'paylater',
      password,
      logFile: join(logDir, 'postgres.log'),
    });
    url = `postgres://paylater:${password}@${pg.host}:${pg.port}/postgres`;
  });
  afterAll(async () => {
    await Promise.all(open.map((s) => s.close().catch(() => undefined)));
    await pg?.stop();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('keeps one key a generation across processes, erases by deleting the rows, and never adds a key after', async () => {
    const [one, two] = [store(), store()];
    const [x, y] = await Promise.all([
      one.addKey('shop-a', wrapped('shop-a', 1)),
      two.addKey('shop-a', wrapped('shop-a', 1)),
    ]);
    expect(x.keys).toHaveLength(1);
    expect(y.keys).toEqual(x.keys);
    await one.addKey('shop-b', wrapped('shop-b', 1));
    expect((await two.list()).map((r) => r.merchantId)).toEqual(['shop-a', 'shop-b']);

    const erased = await two.erase('shop-a', 'ops');
    expect(erased).toEqual({ merchantId: 'shop-a', keys: [], erasure: { at: expect.any(String), by: 'ops' } });
    expect((await one.addKey('shop-a', wrapped('shop-a', 2))).keys).toEqual([]);
    expect((await one.erase('shop-a', 'later')).erasure).toEqual(erased.erasure);
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query(
        "SELECT count(*)::int AS n FROM paylater_merchant_keys WHERE merchant_id = 'shop-a'",
      );
      expect(rows[0]).toEqual({ n: 0 });
    } finally {
      await c.end();
    }
    expect((await one.read('shop-b'))!.keys).toHaveLength(1);
  });

  it('serves the envelope codec: a key made by one process decodes in another', async () => {
    const context: SerializationContext = {
      type: 'workflow',
      namespace: 'default',
      workflowId: 'merchant-secrets:shop-c',
    };
    const writer = new MerchantPayloadCodec({
      masterKeys: [master],
      ring: new MerchantKeyRing({ store: store(), masterKeys: [master] }),
    });
    const reader = new MerchantPayloadCodec({
      masterKeys: [master],
      ring: new MerchantKeyRing({ store: store(), masterKeys: [master] }),
    });
    const encoded = await writer.encode([defaultPayloadConverter.toPayload({ v: 1 })], context);
    expect(defaultPayloadConverter.fromPayload((await reader.decode(encoded))[0]!)).toEqual({ v: 1 });
  });
});
