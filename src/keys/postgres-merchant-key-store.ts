import { Pool, type PoolClient } from 'pg';
import type { MerchantKeyRecord, MerchantKeyStore, WrappedMerchantKey } from '../security/merchant-keys';
import { describeUrl } from '../audit/setting';

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

export class PostgresMerchantKeyStore implements MerchantKeyStore {
  readonly location: string;
  private readonly pool: Pool;
  private schema: Promise<void> | undefined;

  constructor(url: string, options: { maxConnections?: number } = {}) {
    this.location = describeUrl(url);
    this.pool = new Pool({
      connectionString: url,
      max: options.maxConnections ?? 4,
      connectionTimeoutMillis: 5_000,
      query_timeout: 10_000,
      application_name: 'paylater-merchant-keys',
    });
    this.pool.on('error', () => undefined);
  }

  /** Creates the tables once (idempotent, serialized across processes); again after a failure. */
  ready(): Promise<void> {
    this.schema ??= this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      await c.query(SCHEMA);
    }).catch((err: unknown) => {
      this.schema = undefined;
      throw err;
    });
    return this.schema;
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

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
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
