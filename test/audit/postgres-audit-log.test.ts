/**
 * The audit trail in PostgreSQL (src/audit/postgres-audit-log.ts) against a real server: a throwaway cluster started
 * as `npm run test:cluster` starts one (tools/cluster/postgres.ts). Several appenders, as several API processes, keep
 * one chain; the records cannot be updated or deleted through the table; an edit by its owner is found by verify.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startPostgres, type Postgres } from '../../tools/cluster/postgres';
import { freePort } from '../../tools/harness/processes';
import { PostgresAuditLog } from '../../src/audit/postgres-audit-log';
import { AuditUnavailableError } from '../../src/audit/audit-log';
import type { AuditEntry } from '../../src/security/audit-chain';
import { describeWithPostgres, findPostgresBinDir } from '../helpers/postgres-binaries';

jest.setTimeout(120_000);

const entry = (name: string): AuditEntry => ({
  actor: { kind: 'merchant', name },
  action: 'callback-signing-secret.rotate',
  target: { kind: 'merchant', id: name },
  details: { gracePeriodMs: 86_400_000, via: 'api' },
});

describeWithPostgres('the audit trail in PostgreSQL')('the audit trail in PostgreSQL', () => {
  let pg: Postgres;
  let logDir: string;
  let url: string;
  const open: PostgresAuditLog[] = [];
  const store = () => {
    const log = new PostgresAuditLog(url);
    open.push(log);
    return log;
  };
  const sql = async (text: string) => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return await c.query(text);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    const binDir = findPostgresBinDir();
    if (!binDir) throw new Error('PAYLATER_REQUIRE_TOOLS is set and PostgreSQL is not installed');
    logDir = mkdtempSync(join(tmpdir(), 'audit-pg-log-'));
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
    await Promise.all(open.map((l) => l.close().catch(() => undefined)));
    await pg?.stop();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('keeps one chain with appenders of several processes (pools) appending at once', async () => {
    const appenders = [store(), store(), store()];
    await Promise.all(appenders.map((a) => a.ready())); // their schema creations serialize too
    await Promise.all(Array.from({ length: 60 }, (_, i) => appenders[i % 3]!.append(entry(`shop-${i % 7}`))));
    const verdict = await store().verify();
    expect(verdict).toMatchObject({ ok: true, records: 60, head: { sequence: 60 } });
    const page = await appenders[0]!.query({ limit: 10, after: 50 });
    expect(page.map((r) => r.sequence)).toEqual([51, 52, 53, 54, 55, 56, 57, 58, 59, 60]);
    expect(await appenders[1]!.query({ limit: 100, actor: 'shop-3' })).toHaveLength(
      Array.from({ length: 60 }, (_, i) => i % 7).filter((m) => m === 3).length,
    );
    // Times follow sequence numbers whichever process appended (the database's clock).
    const all = await appenders[2]!.query({ limit: 100 });
    for (let i = 1; i < all.length; i++)
      expect(Date.parse(all[i]!.at)).toBeGreaterThanOrEqual(Date.parse(all[i - 1]!.at));
  });

  it('refuses UPDATE, DELETE and TRUNCATE of records', async () => {
    await expect(sql("UPDATE paylater_audit_log SET actor_name = 'x' WHERE sequence = 1")).rejects.toThrow(
      /append-only/,
    );
    await expect(sql('DELETE FROM paylater_audit_log WHERE sequence = 2')).rejects.toThrow(/append-only/);
    await expect(sql('TRUNCATE paylater_audit_log')).rejects.toThrow(/append-only/);
  });

  it('names a record its owner changed or deleted past the trigger, and the tail cut against the head row', async () => {
    await sql('ALTER TABLE paylater_audit_log DISABLE TRIGGER USER');
    try {
      await sql(
        'UPDATE paylater_audit_log SET record = replace(record, \'"via":"api"\', \'"via":"console"\') WHERE sequence = 7',
      );
      expect(await store().verify()).toMatchObject({ ok: false, sequence: 7, problem: /changed/ });
      await sql('DELETE FROM paylater_audit_log WHERE sequence = 7');
      expect(await store().verify()).toMatchObject({ ok: false, sequence: 8, problem: /record 7 is missing/ });
      await sql('DELETE FROM paylater_audit_log WHERE sequence >= 7');
      expect(await store().verify()).toMatchObject({ ok: false, sequence: 7, problem: /the head says 60/ });
    } finally {
      await sql('ALTER TABLE paylater_audit_log ENABLE TRIGGER USER');
    }
  });

  it('fails an append when the database is unreachable (the action is then refused)', async () => {
    const unreachable = new PostgresAuditLog(`postgres://paylater:x@127.0.0.1:${await freePort()}/postgres`);
    open.push(unreachable);
    await expect(unreachable.append(entry('shop-a'))).rejects.toBeInstanceOf(AuditUnavailableError);
  });
});
