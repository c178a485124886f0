import {
  chainRecord,
  EMPTY_HEAD,
  verifyAuditChain,
  type AuditAction,
  type AuditActorKind,
  type AuditEntry,
  type AuditHead,
  type AuditRecord,
  type AuditVerdict,
} from '../security/audit-chain';

/**
 * An audit trail's store (docs/security.md#audit-trail): append-only, one hash chain (src/security/audit-chain.ts).
 * Two kinds: a file of JSON lines for the embedded stack (./file-audit-log.ts), PostgreSQL for several API processes
 * (./postgres-audit-log.ts), chosen by AUDIT_LOG (./open.ts).
 */
export interface AuditLog {
  /** Where it is, for logs and messages: a path, or a database's host and name (never a password). */
  readonly location: string;
  /**
   * Appends the entry as the chain's next record and resolves once it is durable (fsync'd, committed). Rejects with
   * AuditUnavailableError when it cannot: the audited action must then not happen (src/api/audit.ts answers 503).
   */
  append(entry: AuditEntry): Promise<AuditRecord>;
  /** Records matching the query, by sequence number ascending, at most `limit`. */
  query(query: AuditQuery): Promise<AuditRecord[]>;
  /** Reads every record and checks the chain, against the store's own head where it keeps one. */
  verify(expectedHead?: AuditHead): Promise<AuditVerdict>;
  close(): Promise<void>;
}

export interface AuditQuery {
  /** Records after this sequence number (the previous page's last); 0 or absent: from the first. */
  after?: number;
  limit: number;
  /** At or after this time. */
  since?: Date;
  /** Before this time. */
  until?: Date;
  action?: AuditAction;
  /** The actor's name (a key's name, a tool's). */
  actor?: string;
  actorKind?: AuditActorKind;
}

/** The store could not take a record: the action it was to record must not happen. */
export class AuditUnavailableError extends Error {
  override name = 'AuditUnavailableError';
  constructor(
    readonly location: string,
    readonly reason: string,
  ) {
    super(`the audit trail (${location}) cannot be written: ${reason}`);
  }
}

/** True when a record matches the query's filters (its `after` and `limit` apart). */
export function matchesAuditQuery(record: AuditRecord, query: AuditQuery): boolean {
  const at = Date.parse(record.at);
  return (
    (query.after === undefined || record.sequence > query.after) &&
    (query.since === undefined || at >= query.since.getTime()) &&
    (query.until === undefined || at < query.until.getTime()) &&
    (query.action === undefined || record.action === query.action) &&
    (query.actor === undefined || record.actor.name === query.actor) &&
    (query.actorKind === undefined || record.actor.kind === query.actorKind)
  );
}

/**
 * A chain held in memory, for tests and for apps built without a configured store (the entry points always pass
 * one: src/api/listeners.ts): it records, and is gone with the process.
 */
export class MemoryAuditLog implements AuditLog {
  readonly location = 'memory';
  readonly records: AuditRecord[] = [];
  /** Set to make every append fail, as a store that cannot be written does. */
  failing: string | undefined;

  append(entry: AuditEntry): Promise<AuditRecord> {
    if (this.failing !== undefined) return Promise.reject(new AuditUnavailableError(this.location, this.failing));
    const last = this.records.at(-1);
    const head = last ? { sequence: last.sequence, hash: last.hash } : EMPTY_HEAD;
    const record = chainRecord(head, entry, new Date());
    this.records.push(record);
    return Promise.resolve(record);
  }

  query(query: AuditQuery): Promise<AuditRecord[]> {
    return Promise.resolve(this.records.filter((r) => matchesAuditQuery(r, query)).slice(0, query.limit));
  }

  verify(expectedHead?: AuditHead): Promise<AuditVerdict> {
    return Promise.resolve(
      verifyAuditChain(
        this.records.map((record, i) => ({ record, position: i + 1 })),
        expectedHead,
      ),
    );
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
