import type { AuditLog } from './audit-log';
import { FileAuditLog } from './file-audit-log';
import { PostgresAuditLog } from './postgres-audit-log';
import { PostgresStore } from './postgres-store';
import type { AuditLogSetting } from './setting';

/**
 * The store to append to (an API process, `npm start`, `npm run deploy`): a file is opened, locked and checked now;
 * PostgreSQL is connected and its tables made now, so a process that cannot keep its trail does not start.
 */
export async function openAuditLogWriter(setting: AuditLogSetting): Promise<AuditLog> {
  if (setting.kind === 'file') return FileAuditLog.openWriter(setting.path);
  return PostgresStore.opened(new PostgresAuditLog(setting.url));
}

/** The store to read (`npm run audit:verify`): nothing is locked or created but PostgreSQL's tables. */
export function openAuditLogReader(setting: AuditLogSetting): AuditLog {
  return setting.kind === 'file' ? FileAuditLog.openReader(setting.path) : new PostgresAuditLog(setting.url);
}
