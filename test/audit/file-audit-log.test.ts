/** The embedded stack's audit file (src/audit/file-audit-log.ts): durable lines, owner-only, one chain, verify. */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileAuditLog } from '../../src/audit/file-audit-log';
import { AuditUnavailableError } from '../../src/audit/audit-log';
import type { AuditEntry } from '../../src/security/audit-chain';

const entry = (name: string, action: AuditEntry['action'] = 'consent.assign'): AuditEntry => ({
  actor: { kind: 'operator', name },
  action,
  target: { kind: 'consent', id: 'c-42' },
  details: { merchantId: 'shop-a', reassign: false },
});

describe('the audit file', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'audit-file-'));
    file = join(dir, 'audit', 'audit.jsonl');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('appends one line a record in an owner-only folder and file, and verifies after a reopen', async () => {
    const log = await FileAuditLog.openWriter(file);
    await log.append(entry('ops-a'));
    await log.append(entry('ops-b', 'consent.release'));
    await log.close();
    expect(statSync(join(dir, 'audit')).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { sequence: number }).sequence)).toEqual([1, 2]);

    const again = await FileAuditLog.openWriter(file);
    const third = await again.append(entry('ops-c'));
    expect(third.sequence).toBe(3);
    expect(await again.query({ limit: 10, action: 'consent.assign' })).toHaveLength(2);
    expect(await again.query({ limit: 10, actor: 'ops-b' })).toMatchObject([{ sequence: 2 }]);
    expect(await again.query({ limit: 1, after: 1 })).toMatchObject([{ sequence: 2 }]);
    await again.close();
    expect(await FileAuditLog.openReader(file).verify()).toMatchObject({ ok: true, records: 3 });
  });

  it('refuses to verify a file that does not exist (a mistyped AUDIT_LOG is no intact trail)', async () => {
    await expect(FileAuditLog.openReader(join(dir, 'nowhere.jsonl')).verify()).rejects.toThrow(/does not exist/);
    // A writer's new, empty file verifies: it is the trail, with nothing in it yet.
    const writer = await FileAuditLog.openWriter(file);
    expect(await FileAuditLog.openReader(file).verify()).toMatchObject({ ok: true, records: 0 });
    await writer.close();
  });

  it('keeps one chain with two writers appending at once (they take the lock in turn)', async () => {
    const a = await FileAuditLog.openWriter(file);
    const b = await FileAuditLog.openWriter(file);
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).append(entry(`ops-${i}`))));
    await Promise.all([a.close(), b.close()]);
    expect(await FileAuditLog.openReader(file).verify()).toMatchObject({ ok: true, records: 20 });
  });

  it('names a line changed or removed by hand, and refuses to extend a broken chain', async () => {
    const log = await FileAuditLog.openWriter(file);
    for (const name of ['a', 'b', 'c', 'd']) await log.append(entry(name));
    await log.close();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');

    writeFileSync(
      file,
      `${[lines[0], lines[1]!.replace('"name":"b"', '"name":"x"'), lines[2], lines[3]].join('\n')}\n`,
    );
    expect(await FileAuditLog.openReader(file).verify()).toMatchObject({
      ok: false,
      sequence: 2,
      position: 2,
      problem: /changed/,
    });
    await expect(FileAuditLog.openWriter(file)).rejects.toThrow(/does not verify at record 2/);

    writeFileSync(file, `${[lines[0], lines[2], lines[3]].join('\n')}\n`);
    expect(await FileAuditLog.openReader(file).verify()).toMatchObject({
      ok: false,
      sequence: 3,
      problem: /record 2 is missing/,
    });
  });

  it('refuses an append after a torn last line rather than chain past it', async () => {
    const log = await FileAuditLog.openWriter(file);
    await log.append(entry('a'));
    appendFileSync(file, '{"sequence":2,"at"');
    await expect(log.append(entry('b'))).rejects.toBeInstanceOf(AuditUnavailableError);
    await log.close();
    expect(await FileAuditLog.openReader(file).verify()).toMatchObject({ ok: false, sequence: 2, problem: /torn/ });
  });
});
