import { constants, existsSync, type Stats } from 'node:fs';
import { chmod, mkdir, open, readFile, stat, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  chainRecord,
  EMPTY_HEAD,
  serializeAuditRecord,
  verifyAuditChain,
  type AuditEntry,
  type AuditHead,
  type AuditRecord,
  type AuditVerdict,
  type StoredRecord,
} from '../security/audit-chain';
import { AuditUnavailableError, matchesAuditQuery, type AuditLog, type AuditQuery } from './audit-log';
import { inTurn, releaseLock, takeLock } from './file-lock';

/**
 * The embedded stack's audit trail (AUDIT_LOG=file:<path>, docs/security.md#audit-trail): one record a line, as
 * canonical JSON, each line fsync'd before the action goes on. One writer at a time: each append holds `<path>.lock`
 * (created exclusively, holding the writer's pid) while it reads the chain's last line and writes the next, so
 * `npm start` and `npm run deploy` on one machine append to one chain in turn; a lock whose process is gone is taken
 * over. Local disks only (the lock is not for network file systems): several API hosts need PostgreSQL. The folder
 * is the owner's only (0700) and the file too (0600). Readers (`npm run audit:verify`) take no lock.
 */
export class FileAuditLog implements AuditLog {
  /** This writer's last append, settled or not (close waits for it). */
  private last: Promise<unknown> = Promise.resolve();
  /** Set when a write failed partway: the file's end is unknown, so nothing more is appended until a restart. */
  private broken: string | undefined;

  private constructor(
    readonly location: string,
    private readonly handle: FileHandle | undefined,
  ) {}

  /**
   * Opens `path` (relative to the working directory) for appending: makes the folder (0700) and the file (0600)
   * and checks the whole chain, refusing to extend one that does not verify. Throws an Error saying why (the caller
   * names AUDIT_LOG).
   */
  static async openWriter(path: string): Promise<FileAuditLog> {
    const file = resolve(path);
    const dir = dirname(file);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await ownerOnly(dir, 0o700, await stat(dir));
    const handle = await open(file, constants.O_APPEND | constants.O_CREAT | constants.O_RDWR, 0o600);
    try {
      await ownerOnly(file, 0o600, await handle.stat());
      // The file's name in its folder is durable too (a new file), before the first record relies on it.
      const dirHandle = await open(dir, constants.O_RDONLY);
      await dirHandle.sync().finally(() => dirHandle.close());
      const verdict = verifyAuditChain(await readStored(file));
      if (!verdict.ok)
        throw new Error(
          `${file} does not verify at record ${verdict.sequence}: ${verdict.problem}; ` +
            'nothing is appended to a broken chain (npm run audit:verify; docs/operations.md#the-audit-trail)',
        );
      return new FileAuditLog(file, handle);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** Opens `path` to read only (verify, query): no lock, nothing created. */
  static openReader(path: string): FileAuditLog {
    return new FileAuditLog(resolve(path), undefined);
  }

  /** Appends in this process's turn for the file (./file-lock.ts inTurn), then under the lock. */
  append(entry: AuditEntry): Promise<AuditRecord> {
    const next = inTurn(this.location, () => this.appendNow(entry));
    this.last = next.catch(() => undefined);
    return next;
  }

  private async appendNow(entry: AuditEntry): Promise<AuditRecord> {
    const handle = this.handle;
    if (!handle) throw new AuditUnavailableError(this.location, 'opened to read only');
    if (this.broken) throw new AuditUnavailableError(this.location, this.broken);
    const lockFile = `${this.location}.lock`;
    try {
      await takeLock(lockFile);
    } catch (err) {
      throw new AuditUnavailableError(this.location, (err as Error).message);
    }
    try {
      let head: AuditHead;
      try {
        head = await lastHead(handle);
      } catch (err) {
        throw new AuditUnavailableError(this.location, (err as Error).message);
      }
      const record = chainRecord(head, entry, new Date());
      const line = Buffer.from(`${serializeAuditRecord(record)}\n`, 'utf8');
      try {
        let written = 0;
        while (written < line.length) {
          const { bytesWritten } = await handle.write(line, written, line.length - written);
          written += bytesWritten;
        }
        await handle.sync();
      } catch (err) {
        this.broken = `a write failed (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); restart to check the file`;
        throw new AuditUnavailableError(this.location, this.broken);
      }
      return record;
    } finally {
      await releaseLock(lockFile);
    }
  }

  async query(query: AuditQuery): Promise<AuditRecord[]> {
    const found: AuditRecord[] = [];
    for (const item of await readStored(this.location)) {
      if ('unreadable' in item) continue;
      const record = item.record as AuditRecord;
      if (matchesAuditQuery(record, query)) found.push(record);
      if (found.length >= query.limit) break;
    }
    return found;
  }

  async verify(expectedHead?: AuditHead): Promise<AuditVerdict> {
    // A reader's missing file is a mistyped AUDIT_LOG or a trail moved away, never an intact empty one.
    if (!this.handle && !existsSync(this.location))
      throw new Error(`${this.location} does not exist (is AUDIT_LOG the file the API writes?)`);
    return verifyAuditChain(await readStored(this.location), expectedHead);
  }

  async close(): Promise<void> {
    await this.last;
    await this.handle?.close();
  }
}

/** The file's lines as the verifier reads them (position: the line number); none when the file does not exist. */
async function readStored(file: string): Promise<StoredRecord[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const lines = text.split('\n');
  // A file ends with a newline: the empty string after it is no line; anything else there is a torn last line.
  if (lines.at(-1) === '') lines.pop();
  return lines.map((line, i) => {
    try {
      return { record: JSON.parse(line) as unknown, position: i + 1 };
    } catch {
      return {
        unreadable: `line ${i + 1} is not JSON${i === lines.length - 1 ? ' (a torn last write?)' : ''}`,
        position: i + 1,
      };
    }
  });
}

/** Makes a path the owner's only when it is looser (a copy, an umask): it holds who decoded what. */
async function ownerOnly(path: string, mode: number, stats: Stats): Promise<void> {
  if ((stats.mode & 0o077) !== 0) await chmod(path, mode);
}

/** The head the file's last line gives (the chain was verified whole at open; appends only extend it). */
async function lastHead(handle: FileHandle): Promise<AuditHead> {
  const { size } = await handle.stat();
  if (size === 0) return EMPTY_HEAD;
  let chunk = Math.min(size, 64 * 1024);
  for (;;) {
    const buffer = Buffer.alloc(chunk);
    await handle.read(buffer, 0, chunk, size - chunk);
    const text = buffer.toString('utf8');
    if (!text.endsWith('\n'))
      throw new Error('the file does not end with a whole line (a torn write): restart to check it');
    const start = text.lastIndexOf('\n', text.length - 2);
    if (start >= 0 || chunk === size) {
      const record = JSON.parse(text.slice(start + 1, -1)) as { sequence?: unknown; hash?: unknown };
      if (!Number.isSafeInteger(record.sequence) || typeof record.hash !== 'string')
        throw new Error('its last line is not a record: restart to check the file');
      return { sequence: record.sequence as number, hash: record.hash };
    }
    chunk = Math.min(size, chunk * 4);
  }
}
