import { join } from 'node:path';

/** AUDIT_LOG's variable name: problems and start-up failures name it. */
export const AUDIT_LOG = 'AUDIT_LOG';

/** Where the audit trail is kept (AUDIT_LOG): a file of JSON lines, or a PostgreSQL database. */
export type AuditLogSetting = { kind: 'file'; path: string } | { kind: 'postgres'; url: string };

/** AUDIT_LOG unset: a file in the data folder the embedded stack keeps its state in (TEMPORAL_DATA_DIR). */
export function defaultAuditLogSetting(dataDir: string): AuditLogSetting {
  return { kind: 'file', path: join(dataDir, 'audit', 'audit.jsonl') };
}

/**
 * AUDIT_LOG's value: `file:<path>` (relative to the working directory) or `postgres://…` / `postgresql://…`.
 * The problem never repeats a postgres URL (it may hold a password).
 */
export function parseAuditLogSetting(value: string): { setting: AuditLogSetting } | { problem: string } {
  const v = value.trim();
  if (v.startsWith('file:')) {
    const path = v.slice('file:'.length);
    if (path === '' || path.endsWith('/'))
      return { problem: 'file: needs the path of a file, e.g. file:data/audit/audit.jsonl' };
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

/** Where a setting points, for messages and logs (no password). */
export function describeAuditLogSetting(setting: AuditLogSetting): string {
  return setting.kind === 'file' ? `file ${setting.path}` : describeUrl(setting.url);
}

/** `postgres://host:port/database`, without user or password. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'postgres (unparsable URL)';
  }
}
