import type { PoolClient } from 'pg';
import type { MerchantKeyRecord, MerchantKeyStore, WrappedMerchantKey } from '../security/merchant-keys';
import { PostgresStore } from '../audit/postgres-store';

/**
 * The merchant key store of a deployment with several processes (MERCHANT_KEY_STORE=postgres://…,
 * docs/security.md#a-payload-key-per-merchant): a row per wrapped key in `paylater_merchant_keys` and a row per erased
 * merchant in `paylater_merchant_erasures`, made at start as the audit trail's tables are
 * (src/audit/postgres-audit-log.ts). Adding a key and erasing take the merchant's advisory lock in one transaction,
 * so a key is never added beside an erasure. An erasure DELETEs the rows: PostgreSQL frees their space at the next
 * VACUUM; its WAL and backups keep them until they expire (docs/operations.md#erasing-a-merchant).
 */
const KEYS = 'paylater_merchant_keys';
const ERASURES = 'paylater_merchant_erasures';
/** pg_advisory_xact_lock key of the schema's creation (two processes starting at once). */
const SCHEMA_LOCK = 4_711_002;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${KEYS} (
  merchant_id text NOT NULL,
  generation integer NOT NULL,
  wrapped_by text NOT NULL,
  wrapped text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (merchant_id, generation)
);
CREATE TABLE IF NOT EXISTS ${ERASURES} (
  merchant_id text PRIMARY KEY,
  erased_at timestamptz NOT NULL,
  erased_by text NOT NULL
);
`;

interface KeyRow {
  generation: number;
  wrapped_by: string;
  wrapped: string;
  created_at: Date;
}

export class PostgresMerchantKeyStore extends PostgresStore implements MerchantKeyStore {
  /** `url`: a postgres:// connection string (its password is never shown: `location` is host, port and database). */
  constructor(url: string, options: { maxConnections?: number } = {}) {
    super(url, { sql: SCHEMA, lock: SCHEMA_LOCK }, { applicationName: 'paylater-merchant-keys', ...options });
  }

  async read(merchantId: string): Promise<MerchantKeyRecord | undefined> {
    await this.ready();
    return this.transaction((c) => readIn(c, merchantId));
  }

  async list(): Promise<MerchantKeyRecord[]> {
    await this.ready();
    const { rows } = await this.pool.query<{ merchant_id: string }>(
      `SELECT merchant_id FROM ${KEYS} UNION SELECT merchant_id FROM ${ERASURES} ORDER BY merchant_id`,
    );
    const records: MerchantKeyRecord[] = [];
    for (const { merchant_id } of rows) {
      const record = await this.read(merchant_id);
      if (record) records.push(record);
    }
    return records;
  }

  async addKey(merchantId: string, key: WrappedMerchantKey): Promise<MerchantKeyRecord> {
    await this.ready();
    return this.transaction(async (c) => {
      await lockMerchant(c, merchantId);
      const { rowCount } = await c.query(`SELECT 1 FROM ${ERASURES} WHERE merchant_id = $1`, [merchantId]);
      if (!rowCount)
        await c.query(
          `INSERT INTO ${KEYS} (merchant_id, generation, wrapped_by, wrapped, created_at) VALUES ($1, $2, $3, $4, $5) ` +
            'ON CONFLICT (merchant_id, generation) DO NOTHING',
          [merchantId, key.generation, key.wrappedBy, key.wrapped, key.createdAt],
        );
      return (await readIn(c, merchantId))!;
    });
  }

  async erase(merchantId: string, by: string): Promise<MerchantKeyRecord> {
    await this.ready();
    return this.transaction(async (c) => {
      await lockMerchant(c, merchantId);
      await c.query(
        `INSERT INTO ${ERASURES} (merchant_id, erased_at, erased_by) VALUES ($1, clock_timestamp(), $2) ` +
          'ON CONFLICT (merchant_id) DO NOTHING',
        [merchantId, by],
      );
      await c.query(`DELETE FROM ${KEYS} WHERE merchant_id = $1`, [merchantId]);
      return (await readIn(c, merchantId))!;
    });
  }
}

/** The merchant's lock for this transaction: adds and erasures of one merchant take turns. */
async function lockMerchant(c: PoolClient, merchantId: string): Promise<void> {
  await c.query("SELECT pg_advisory_xact_lock(hashtext('paylater merchant key ' || $1))", [merchantId]);
}

async function readIn(c: PoolClient, merchantId: string): Promise<MerchantKeyRecord | undefined> {
  const erasure = await c.query<{ erased_at: Date; erased_by: string }>(
    `SELECT erased_at, erased_by FROM ${ERASURES} WHERE merchant_id = $1`,
    [merchantId],
  );
  const keys = await c.query<KeyRow>(
    `SELECT generation, wrapped_by, wrapped, created_at FROM ${KEYS} WHERE merchant_id = $1 ORDER BY generation`,
    [merchantId],
  );
  const row = erasure.rows[0];
  if (!row && keys.rows.length === 0) return undefined;
  return {
    merchantId,
    keys: row
      ? []
      : keys.rows.map((k) => ({
          generation: k.generation,
          wrappedBy: k.wrapped_by,
          wrapped: k.wrapped,
          createdAt: k.created_at.toISOString(),
        })),
    ...(row ? { erasure: { at: row.erased_at.toISOString(), by: row.erased_by } } : {}),
  };
}
