/** The audit trail's hash chain (src/security/audit-chain.ts): what verify finds, and which record it names. */
import {
  auditRecordHash,
  canonicalJson,
  chainRecord,
  EMPTY_HEAD,
  GENESIS_HASH,
  verifyAuditChain,
  type AuditEntry,
  type AuditRecord,
  type StoredRecord,
} from '../../src/security/audit-chain';

const entry = (i: number): AuditEntry => ({
  actor: { kind: 'operator', name: `ops-${i}` },
  action: 'codec.decode',
  target: { kind: 'namespace', id: 'default' },
  details: { payloads: i, keyIds: ['2026-01'] },
});

function chain(n: number): AuditRecord[] {
  const records: AuditRecord[] = [];
  let head = EMPTY_HEAD;
  for (let i = 1; i <= n; i++) {
    const record = chainRecord(head, entry(i), new Date(Date.UTC(2026, 0, 1, 0, 0, i)));
    records.push(record);
    head = { sequence: record.sequence, hash: record.hash };
  }
  return records;
}

/** As a store hands them over: parsed from their serialization, positions from 1. */
const stored = (records: unknown[]): StoredRecord[] =>
  records.map((r, i) => ({ record: JSON.parse(JSON.stringify(r)) as unknown, position: i + 1 }));

describe('canonicalJson', () => {
  it('sorts keys at every depth and drops undefined members, so key order never changes a hash', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    expect(canonicalJson({ z: 'é', a: null })).toBe('{"a":null,"z":"é"}');
  });
});

describe('the audit chain', () => {
  it('links each record to the one before, from the genesis hash, and verifies', () => {
    const records = chain(5);
    expect(records[0]!.prevHash).toBe(GENESIS_HASH);
    expect(records.map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5]);
    for (let i = 1; i < records.length; i++) expect(records[i]!.prevHash).toBe(records[i - 1]!.hash);
    expect(records[2]!.hash).toBe(auditRecordHash(records[2]!));
    expect(verifyAuditChain(stored(records))).toEqual({
      ok: true,
      records: 5,
      head: { sequence: 5, hash: records[4]!.hash },
    });
    expect(verifyAuditChain([])).toEqual({ ok: true, records: 0, head: EMPTY_HEAD });
  });

  it('names the record after a deleted one', () => {
    const records = chain(5);
    records.splice(2, 1); // record 3 removed
    const verdict = verifyAuditChain(stored(records));
    expect(verdict).toMatchObject({ ok: false, sequence: 4, position: 3 });
    expect(!verdict.ok && verdict.problem).toMatch(/sequence 4 follows 2: record 3 is missing/);
  });

  it('names a record whose field was changed, and one re-hashed after a change (its successor breaks)', () => {
    const changed = chain(5) as unknown as Record<string, unknown>[];
    changed[1] = { ...changed[1], actor: { kind: 'operator', name: 'someone-else' } };
    const verdict = verifyAuditChain(stored(changed));
    expect(verdict).toMatchObject({ ok: false, sequence: 2, lastGood: { sequence: 1 } });
    expect(!verdict.ok && verdict.problem).toMatch(/does not match its content.*changed/);

    // Changed and given a fresh hash: the record verifies alone, the next one's prevHash no longer does.
    const rehashed = chain(5);
    const forged = { ...rehashed[1]!, details: { payloads: 0, keyIds: [] } };
    rehashed[1] = { ...forged, hash: auditRecordHash(forged) };
    const second = verifyAuditChain(stored(rehashed));
    expect(second).toMatchObject({ ok: false, sequence: 3 });
    expect(!second.ok && second.problem).toMatch(/prevHash .* is not the hash of record 2/);
  });

  it('names the first record out of place when two are swapped', () => {
    const records = chain(5);
    [records[1], records[2]] = [records[2]!, records[1]!];
    const verdict = verifyAuditChain(stored(records));
    expect(verdict).toMatchObject({ ok: false, sequence: 3, position: 2 });
    expect(!verdict.ok && verdict.problem).toMatch(/sequence 3 follows 1: record 2 is missing/);
  });

  it('finds a record added with a field of its own, an unreadable line, and a repeated record', () => {
    const extra = chain(3) as unknown as Record<string, unknown>[];
    extra[2] = { ...extra[2], note: 'added' };
    expect(verifyAuditChain(stored(extra))).toMatchObject({ ok: false, sequence: 3 });

    const unreadable: StoredRecord[] = [...stored(chain(2)), { unreadable: 'line 3 is not JSON', position: 3 }];
    expect(verifyAuditChain(unreadable)).toMatchObject({ ok: false, sequence: 3, problem: /cannot be read/ });

    const records = chain(3);
    const repeated = verifyAuditChain(stored([records[0], records[1], records[1], records[2]]));
    expect(repeated).toMatchObject({ ok: false, sequence: 2, position: 3, problem: /out of order/ });
  });

  it('finds records cut from the end only against a head kept elsewhere', () => {
    const records = chain(5);
    const head = { sequence: 5, hash: records[4]!.hash };
    expect(verifyAuditChain(stored(records.slice(0, 3)))).toMatchObject({ ok: true, records: 3 });
    const verdict = verifyAuditChain(stored(records.slice(0, 3)), head);
    expect(verdict).toMatchObject({ ok: false, sequence: 4, problem: /ends at record 3, but the head says 5/ });
    expect(verifyAuditChain(stored(records), head)).toMatchObject({ ok: true });
    expect(verifyAuditChain(stored(records), { sequence: 5, hash: GENESIS_HASH })).toMatchObject({
      ok: false,
      sequence: 5,
    });
  });
});
