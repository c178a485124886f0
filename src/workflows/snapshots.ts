import type { FinanceApplicationCarriedState } from '../shared/finance-application';
import type { LateAccountEventsInput } from '../shared/consent-refresh';
import type { TransactionEventsInput } from '../shared/transaction-events';

/**
 * The data that crosses builds (docs/deploying.md): a pinned run never meets another build's code,
 * but the snapshot it hands over at continue-as-new is read by the build it moves to, and a rollback hands a newer
 * build's snapshot back to an older one. So each carried snapshot has a schema version and one reader here:
 *
 * - version 1 is the unlabelled shape written before Worker Versioning (every snapshot in test/histories);
 * - a newer build may only ADD optional fields and bump the version; a reader takes any version it knows or a
 *   newer one (reading the fields it knows: what a rollback needs), and rejects only a snapshot that lacks what
 *   every version has.
 *
 * A rejection throws a plain Error: the workflow task fails and is retried, so the run waits, unchanged, for a build
 * that reads it (a deploy mistake the replay gate's snapshot check catches before it ships).
 */

/** The schema version each build writes. Bump on an additive change; never reuse a number. */
export const SNAPSHOT_SCHEMA_VERSIONS = {
  financeApplication: 2,
  transactionEvents: 2,
  lateAccountEvents: 2,
} as const;

export class SnapshotRejected extends Error {
  constructor(kind: string, problem: string) {
    super(`${kind} snapshot rejected: ${problem}`);
    this.name = 'SnapshotRejected';
  }
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

function versionOf(kind: string, raw: Json): number {
  const version = raw.schemaVersion ?? 1;
  if (!isCount(version) || version < 1) throw new SnapshotRejected(kind, `schemaVersion ${JSON.stringify(version)}`);
  return version;
}

function need(kind: string, ok: boolean, field: string): void {
  if (!ok) throw new SnapshotRejected(kind, `${field} is missing or of the wrong type`);
}

/** The finance application's carried snapshot (FinanceApplication.snapshot), of any version. */
export function readFinanceSnapshot(raw: unknown): FinanceApplicationCarriedState {
  const kind = 'finance application';
  if (!isObject(raw)) throw new SnapshotRejected(kind, 'not an object');
  versionOf(kind, raw);
  const state = raw.state;
  need(kind, isObject(state), 'state');
  const s = state as Json;
  need(kind, typeof s.merchantReference === 'string', 'state.merchantReference');
  need(kind, Array.isArray(s.history), 'state.history');
  need(kind, typeof s.done === 'boolean', 'state.done');
  need(kind, typeof s.deadlineAt === 'string', 'state.deadlineAt');
  need(kind, isCount(s.runs), 'state.runs');
  need(kind, Array.isArray(raw.unsentNotifications), 'unsentNotifications');
  need(kind, isStringArray(raw.pendingWebhookIds), 'pendingWebhookIds');
  need(kind, raw.notFoundIds === undefined || isStringArray(raw.notFoundIds), 'notFoundIds');
  need(
    kind,
    raw.unsentDuplicateReports === undefined || isStringArray(raw.unsentDuplicateReports),
    'unsentDuplicateReports',
  );
  return raw as unknown as FinanceApplicationCarriedState;
}

/** The transaction events' carried snapshot, of any version. */
export function readTransactionEventsSnapshot(raw: unknown): NonNullable<TransactionEventsInput['carried']> {
  const kind = 'transaction events';
  if (!isObject(raw)) throw new SnapshotRejected(kind, 'not an object');
  versionOf(kind, raw);
  need(kind, isStringArray(raw.pendingAccountIds), 'pendingAccountIds');
  need(kind, isCount(raw.events), 'events');
  need(kind, isCount(raw.batches), 'batches');
  return raw as unknown as NonNullable<TransactionEventsInput['carried']>;
}

/** The late reports' carried snapshot, of any version. */
export function readLateReportsSnapshot(raw: unknown): NonNullable<LateAccountEventsInput['carried']> {
  const kind = 'late reports';
  if (!isObject(raw)) throw new SnapshotRejected(kind, 'not an object');
  versionOf(kind, raw);
  need(kind, Array.isArray(raw.reports), 'reports');
  need(kind, isStringArray(raw.seenKeys), 'seenKeys');
  need(kind, isCount(raw.received), 'received');
  need(kind, isCount(raw.duplicates), 'duplicates');
  return raw as unknown as NonNullable<LateAccountEventsInput['carried']>;
}
