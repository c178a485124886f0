import {
  chainRecord,
  GENESIS_HASH,
  serializeAuditRecord,
  verifyAuditChain,
  type AuditEntry,
  type AuditHead,
  type AuditRecord,
  type AuditVerdict,
  type StoredRecord,
} from '../security/audit-chain';
import { AuditUnavailableError, type AuditLog, type AuditQuery } from './audit-log';
import { PostgresStore } from './postgres-store';

/**
 * The audit trail of a deployment with several API processes (AUDIT_LOG=postgres://…, docs/security.md#audit-trail):
 * every record a row of `paylater_audit_log` holding its canonical JSON (the text hashed, byte for byte) beside the
 * columns the operator route filters on, and the chain's head one row of `paylater_audit_head`. An append is one
 * transaction that locks the head row (`SELECT … FOR UPDATE`), so appenders of every process take turns on one chain;
 * its time is the database's clock, so times follow sequence numbers whichever process appends. A trigger refuses
 * UPDATE, DELETE and TRUNCATE of the records: an edit needs the table's owner to drop it first, and the chain still
 * shows what was changed.
 */
const LOG = 'paylater_audit_log';
const HEAD = 'paylater_audit_head';
/** pg_advisory_xact_lock key of the schema's creation (two processes starting at once). */
const SCHEMA_LOCK = 4_711_001;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${HEAD} (
  id smallint PRIMARY KEY CHECK (id = 1),
  sequence bigint NOT NULL,
  hash text NOT NULL
);
INSERT INTO ${HEAD} (id, sequence, hash) VALUES (1, 0, '${GENESIS_HASH}') ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS ${LOG} (
  sequence bigint PRIMARY KEY,
  at timestamptz NOT NULL,
  actor_kind text NOT NULL,
  actor_name text NOT NULL,
  action text NOT NULL,
  record text NOT NULL
);
CREATE INDEX IF NOT EXISTS ${LOG}_at ON ${LOG} (at);
CREATE OR REPLACE FUNCTION ${LOG}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '${LOG} is append-only (docs/security.md#audit-trail)';
END $$;
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '${LOG}_no_change') THEN
    CREATE TRIGGER ${LOG}_no_change BEFORE UPDATE OR DELETE ON ${LOG} FOR EACH ROW EXECUTE FUNCTION ${LOG}_append_only();
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '${LOG}_no_truncate') THEN
    CREATE TRIGGER ${LOG}_no_truncate BEFORE TRUNCATE ON ${LOG} FOR EACH STATEMENT EXECUTE FUNCTION ${LOG}_append_only();
  END IF;
END $$;
`;

/** Rows read per round trip by verify. */
const VERIFY_BATCH = 5_000;

export class PostgresAuditLog extends PostgresStore implements AuditLog {
  /** `url`: a postgres:// connection string (its password is never shown: `location` is host, port and database). */
  constructor(url: string, options: { maxConnections?: number } = {}) {
    super(url, { sql: SCHEMA, lock: SCHEMA_LOCK }, { applicationName: 'paylater-audit', ...options });
  }

  async append(entry: AuditEntry): Promise<AuditRecord> {
    try {
      await this.ready();
      return await this.transaction(async (c) => {
        const { rows } = await c.query<{ sequence: string; hash: string; now: Date }>(
          `SELECT sequence, hash, clock_timestamp() AS now FROM ${HEAD} WHERE id = 1 FOR UPDATE`,
        );
        const head = rows[0];
        if (!head) throw new Error(`${HEAD} has no row`);
        const record = chainRecord({ sequence: Number(head.sequence), hash: head.hash }, entry, head.now);
        await c.query(
          `INSERT INTO ${LOG} (sequence, at, actor_kind, actor_name, action, record) VALUES ($1, $2, $3, $4, $5, $6)`,
          [
            record.sequence,
            record.at,
            record.actor.kind,
            record.actor.name,
            record.action,
            serializeAuditRecord(record),
          ],
        );
        await c.query(`UPDATE ${HEAD} SET sequence = $1, hash = $2 WHERE id = 1`, [record.sequence, record.hash]);
        return record;
      });
    } catch (err) {
      throw new AuditUnavailableError(this.location, (err as Error).message);
    }
  }

  async query(query: AuditQuery): Promise<AuditRecord[]> {
    await this.ready();
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (clause: string, value: unknown) => {
      values.push(value);
      where.push(clause.replace('?', `$${values.length}`));
    };
    if (query.after !== undefined) add('sequence > ?', query.after);
    if (query.since) add('at >= ?', query.since);
    if (query.until) add('at < ?', query.until);
    if (query.action) add('action = ?', query.action);
    if (query.actor) add('actor_name = ?', query.actor);
    if (query.actorKind) add('actor_kind = ?', query.actorKind);
    values.push(query.limit);
    const { rows } = await this.pool.query<{ record: string }>(
      `SELECT record FROM ${LOG} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ` +
        `ORDER BY sequence LIMIT $${values.length}`,
      values,
    );
    return rows.map((r) => JSON.parse(r.record) as AuditRecord);
  }

  /** Every row in sequence order, checked as a chain ending at the head row (or at `expectedHead` when given). */
  async verify(expectedHead?: AuditHead): Promise<AuditVerdict> {
    await this.ready();
    const stored: StoredRecord[] = [];
    let after = -1;
    for (;;) {
      const { rows } = await this.pool.query<{ sequence: string; record: string }>(
        `SELECT sequence, record FROM ${LOG} WHERE sequence > $1 ORDER BY sequence LIMIT $2`,
        [after, VERIFY_BATCH],
      );
      for (const row of rows) {
        const position = stored.length + 1;
        try {
          stored.push({ record: JSON.parse(row.record) as unknown, position });
        } catch {
          stored.push({ unreadable: `the row with sequence ${row.sequence} is not JSON`, position });
        }
      }
      if (rows.length < VERIFY_BATCH) break;
      after = Number(rows.at(-1)!.sequence);
    }
    const { rows } = await this.pool.query<{ sequence: string; hash: string }>(
      `SELECT sequence, hash FROM ${HEAD} WHERE id = 1`,
    );
    const head = rows[0] ? { sequence: Number(rows[0].sequence), hash: rows[0].hash } : undefined;
    return verifyAuditChain(stored, expectedHead ?? head);
  }
}
