import { createHash } from 'node:crypto';

/**
 * The audit trail's records and their hash chain (docs/security.md#audit-trail,
 * docs/decisions/0047-hash-chained-audit-trail.md): pure, no I/O. Each record carries its sequence number and the hash
 * of the record before it, and its own hash is SHA-256 over a canonical serialization of everything else, prevHash
 * included; so a record removed, moved or changed breaks the chain at a record `verifyAuditChain` names.
 */

/** What is recorded. `erasure`: a merchant's payload keys destroyed (src/temporal/merchant-erasure.ts). */
export const AUDIT_ACTIONS = [
  'codec.decode',
  'callback.resend',
  'callback-signing-secret.rotate',
  'consent.assign',
  'consent.release',
  'deployment.promote',
  'deployment.ramp',
  'erasure',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_ACTOR_KINDS = ['operator', 'merchant', 'tool'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

/** Who acted: an operator or merchant by its key's name (never the key), a tool by its name. */
export interface AuditActor {
  kind: AuditActorKind;
  name: string;
}

/** What was acted on. */
export interface AuditTarget {
  kind: 'namespace' | 'application' | 'merchant' | 'consent' | 'deployment';
  id: string;
}

/** Plain values only: the record's details never hold a secret or a customer's data (docs/security.md#audit-trail). */
export type AuditDetailValue = string | number | boolean | null | readonly string[];
export type AuditDetails = Readonly<Record<string, AuditDetailValue>>;

/** What an appender says; the store adds the sequence number, the time and the hashes. */
export interface AuditEntry {
  actor: AuditActor;
  action: AuditAction;
  target: AuditTarget;
  details: AuditDetails;
}

export interface AuditRecord extends AuditEntry {
  /** 1, 2, 3…: one more than the record before it. */
  sequence: number;
  /** ISO 8601 UTC, when the store appended it. */
  at: string;
  /** The previous record's hash; GENESIS_HASH for the first. */
  prevHash: string;
  /** Lower-case hex SHA-256 of canonicalJson(the record without `hash`). */
  hash: string;
}

/** The prevHash of record 1. */
export const GENESIS_HASH = '0'.repeat(64);

/** The chain's end as a store keeps it: the last sequence number and its hash (0 and GENESIS_HASH when empty). */
export interface AuditHead {
  sequence: number;
  hash: string;
}
export const EMPTY_HEAD: AuditHead = { sequence: 0, hash: GENESIS_HASH };

/**
 * JSON with every object's keys sorted (by UTF-16 code units) and no whitespace: one byte string per value, whatever
 * order a writer or a database (jsonb) puts the keys in. Only what JSON.stringify keeps; undefined members are dropped.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('canonicalJson: a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The hash a record must carry: SHA-256 over the canonical serialization of all its fields but `hash`. */
export function auditRecordHash(record: Omit<AuditRecord, 'hash'> & { hash?: string }): string {
  const { hash: _ignored, ...hashed } = record;
  return createHash('sha256').update(canonicalJson(hashed), 'utf8').digest('hex');
}

/** The record that follows `head`, appended at `at`. */
export function chainRecord(head: AuditHead, entry: AuditEntry, at: Date): AuditRecord {
  const unhashed = {
    sequence: head.sequence + 1,
    at: at.toISOString(),
    actor: { kind: entry.actor.kind, name: entry.actor.name },
    action: entry.action,
    target: { kind: entry.target.kind, id: entry.target.id },
    details: entry.details,
    prevHash: head.hash,
  };
  return { ...unhashed, hash: auditRecordHash(unhashed) };
}

/** One line of a store: the record as canonical JSON (its hash included). */
export function serializeAuditRecord(record: AuditRecord): string {
  return canonicalJson(record);
}

export type AuditVerdict =
  | { ok: true; records: number; head: AuditHead }
  | {
      ok: false;
      /** The first bad record: its sequence number as found (or as expected, when the record cannot be read). */
      sequence: number;
      /** Where the store keeps it (a file's line number, a row's position), when that says more. */
      position?: number;
      problem: string;
      /** The chain as far as it verified. */
      lastGood: AuditHead;
    };

/** What a store hands the verifier: the record as parsed, or the text it could not parse. */
export type StoredRecord = { record: unknown; position: number } | { unreadable: string; position: number };

/**
 * Walks the records in the store's order and names the first that breaks the chain: one that cannot be read or
 * lacks a field, a sequence number that is not the previous one plus one (a record removed, or moved), a prevHash
 * that is not the previous record's hash, a hash that is not its content's (a field changed). With `expectedHead`
 * (a head kept elsewhere: the store's head row, a log line), a chain that ends before it was cut short.
 */
export function verifyAuditChain(stored: Iterable<StoredRecord>, expectedHead?: AuditHead): AuditVerdict {
  let head = EMPTY_HEAD;
  let count = 0;
  for (const item of stored) {
    const expected = head.sequence + 1;
    const bad = (problem: string, sequence = expected): AuditVerdict => ({
      ok: false,
      sequence,
      position: item.position,
      problem,
      lastGood: head,
    });
    if ('unreadable' in item) return bad(`record ${expected} cannot be read: ${item.unreadable}`);
    const shapeProblem = recordShapeProblem(item.record);
    if (shapeProblem) return bad(`record ${expected} ${shapeProblem}`);
    const record = item.record as AuditRecord;
    if (record.sequence !== expected) {
      if (record.sequence > expected) {
        const missing = record.sequence === expected + 1 ? `${expected}` : `${expected} to ${record.sequence - 1}`;
        return bad(
          `sequence ${record.sequence} follows ${head.sequence}: record ${missing} is missing (removed, or moved)`,
          record.sequence,
        );
      }
      return bad(
        `sequence ${record.sequence} follows ${head.sequence}: out of order (moved or repeated)`,
        record.sequence,
      );
    }
    if (record.prevHash !== head.hash)
      return bad(
        `prevHash ${short(record.prevHash)} is not the hash of record ${head.sequence} (${short(head.hash)}): ` +
          'a record before it was changed or replaced',
      );
    const computed = auditRecordHash(record);
    if (record.hash !== computed)
      return bad(`hash ${short(record.hash)} does not match its content (${short(computed)}): the record was changed`);
    head = { sequence: record.sequence, hash: record.hash };
    count++;
  }
  if (expectedHead && expectedHead.sequence > 0) {
    if (head.sequence < expectedHead.sequence)
      return {
        ok: false,
        sequence: head.sequence + 1,
        problem:
          `the chain ends at record ${head.sequence}, but the head says ${expectedHead.sequence}: ` +
          `record ${head.sequence + 1} and after are missing`,
        lastGood: head,
      };
    if (head.sequence === expectedHead.sequence && head.hash !== expectedHead.hash)
      return {
        ok: false,
        sequence: head.sequence,
        problem: `record ${head.sequence}'s hash ${short(head.hash)} is not the head's (${short(expectedHead.hash)})`,
        lastGood: head,
      };
  }
  return { ok: true, records: count, head };
}

const short = (hash: unknown): string => (typeof hash === 'string' ? hash.slice(0, 12) : String(hash));

/** Why a parsed value is not a record (undefined when it is one). */
function recordShapeProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'is not an object';
  const r = value as Record<string, unknown>;
  if (!Number.isSafeInteger(r.sequence) || (r.sequence as number) < 1) return 'has no valid sequence';
  if (typeof r.at !== 'string' || Number.isNaN(Date.parse(r.at))) return 'has no valid time (at)';
  const actor = r.actor as Record<string, unknown> | undefined;
  if (!actor || !AUDIT_ACTOR_KINDS.includes(actor.kind as AuditActorKind) || typeof actor.name !== 'string')
    return 'has no valid actor';
  if (!AUDIT_ACTIONS.includes(r.action as AuditAction)) return `has an unknown action ${JSON.stringify(r.action)}`;
  const target = r.target as Record<string, unknown> | undefined;
  if (!target || typeof target.kind !== 'string' || typeof target.id !== 'string') return 'has no valid target';
  if (r.details === null || typeof r.details !== 'object') return 'has no details';
  if (typeof r.prevHash !== 'string' || typeof r.hash !== 'string') return 'has no prevHash or hash';
  return undefined;
}
