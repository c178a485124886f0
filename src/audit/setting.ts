import { join } from 'node:path';

/** AUDIT_LOG's variable name: problems and start-up failures name it. */
export const AUDIT_LOG = 'AUDIT_LOG';

/** Where the audit trail is kept (AUDIT_LOG): a file of JSON lines, or a PostgreSQL database. */
export type AuditLogSetting = StoreSetting;

/** AUDIT_LOG unset: a file in the data folder the embedded stack keeps its state in (TEMPORAL_DATA_DIR). */
export function defaultAuditLogSetting(dataDir: string): AuditLogSetting {
  return { kind: 'file', path: join(dataDir, 'audit', 'audit.jsonl') };
}

/** Where a store is kept: a file (one machine), or PostgreSQL (several processes). AUDIT_LOG and MERCHANT_KEY_STORE. */
export type StoreSetting = { kind: 'file'; path: string } | { kind: 'postgres'; url: string };

/**
 * A store's setting: `file:<path>` (relative to the working directory) or `postgres://…` / `postgresql://…`
 * (AUDIT_LOG, and MERCHANT_KEY_STORE in src/keys/setting.ts). The problem never repeats a postgres URL (it may hold a
 * password); `exampleFile` is the path its message suggests.
 */
export function parseStoreSetting(value: string, exampleFile: string): { setting: StoreSetting } | { problem: string } {
  const v = value.trim();
  if (v.startsWith('file:')) {
    const path = v.slice('file:'.length);
    if (path === '' || path.endsWith('/'))
      return { problem: `file: needs the path of a file, e.g. file:${exampleFile}` };
    return { setting: { kind: 'file', path } };
  }
  if (/^postgres(ql)?:\/\//i.test(v)) {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      return { problem: 'is not a valid postgres:// URL (the value is not shown: it may hold a password)' };
    }
    if (url.hostname === '' || url.pathname.length <= 1)
      return { problem: 'a postgres:// URL needs a host and a database: postgres://user:password@host:5432/database' };
    return { setting: { kind: 'postgres', url: v } };
  }
  return { problem: 'must be file:<path> or postgres://user:password@host:5432/database' };
}

/** AUDIT_LOG's value (parseStoreSetting). */
export function parseAuditLogSetting(value: string): { setting: AuditLogSetting } | { problem: string } {
  return parseStoreSetting(value, 'data/audit/audit.jsonl');
}

/** Where a store's setting points, for messages and logs (no password). */
export function describeStoreSetting(setting: StoreSetting): string {
  return setting.kind === 'file' ? `file ${setting.path}` : describeUrl(setting.url);
}

/** Where AUDIT_LOG points, for messages and logs (no password). */
export const describeAuditLogSetting: (setting: AuditLogSetting) => string = describeStoreSetting;

/** `postgres://host:port/database`, without user or password. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'postgres (unparsable URL)';
  }
}
