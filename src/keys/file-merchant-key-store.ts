import { constants } from 'node:fs';
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { MerchantKeyRecord, MerchantKeyStore, WrappedMerchantKey } from '../security/merchant-keys';
import { inTurn, releaseLock, takeLock } from '../audit/file-lock';

/**
 * The embedded stack's merchant key store (MERCHANT_KEY_STORE=file:<path>, docs/security.md#a-payload-key-per-merchant):
 * one JSON document `{ version: 1, merchants: { <id>: { keys, erasure? } } }` holding only wrapped keys
 * (src/security/merchant-keys.ts). Every change holds `<path>.lock` (src/audit/file-lock.ts), reads the document,
 * and replaces it whole (written beside it, fsync'd, renamed over it, the folder fsync'd), so a reader sees the old
 * document or the new one and an erased key is in no version of the file that follows. The folder is the owner's
 * only (0700), the file too (0600). Local disks only: several hosts need PostgreSQL.
 */
interface MerchantEntry {
  keys: WrappedMerchantKey[];
  erasure?: { at: string; by: string };
}

/** The document in memory: a Map, so that no merchant id (`__proto__` matches MERCHANT_ID_PATTERN) is special. */
interface KeyFile {
  merchants: Map<string, MerchantEntry>;
}

export class FileMerchantKeyStore implements MerchantKeyStore {
  readonly location: string;
  /** This store's last change, settled or not (close waits for it). */
  private last: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.location = resolve(path);
  }

  /** Makes the folder (0700) now, so a store that cannot be kept stops start-up rather than the first payload. */
  async ready(): Promise<void> {
    const dir = dirname(this.location);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (((await stat(dir)).mode & 0o077) !== 0) await chmod(dir, 0o700);
    await this.load();
  }

  async read(merchantId: string): Promise<MerchantKeyRecord | undefined> {
    return recordOf(await this.load(), merchantId);
  }

  async list(): Promise<MerchantKeyRecord[]> {
    const file = await this.load();
    return [...file.merchants.keys()].sort().map((id) => recordOf(file, id)!);
  }

  addKey(merchantId: string, key: WrappedMerchantKey): Promise<MerchantKeyRecord> {
    return this.change((file) => {
      const entry = file.merchants.get(merchantId) ?? { keys: [] };
      file.merchants.set(merchantId, entry);
      if (entry.erasure || entry.keys.some((k) => k.generation === key.generation)) return false;
      entry.keys.push(key);
      entry.keys.sort((a, b) => a.generation - b.generation);
      return true;
    }, merchantId);
  }

  erase(merchantId: string, by: string): Promise<MerchantKeyRecord> {
    return this.change((file) => {
      if (file.merchants.get(merchantId)?.erasure) return false;
      file.merchants.set(merchantId, { keys: [], erasure: { at: new Date().toISOString(), by } });
      return true;
    }, merchantId);
  }

  async close(): Promise<void> {
    await this.last;
  }

  /** Applies `edit` under the lock; writes the file when it says it changed something. */
  private change(edit: (file: KeyFile) => boolean, merchantId: string): Promise<MerchantKeyRecord> {
    // This process's changes to the file one after another (inTurn), the lock orders them with other processes'.
    const next = inTurn(this.location, async () => {
      const lockFile = `${this.location}.lock`;
      await mkdir(dirname(this.location), { recursive: true, mode: 0o700 });
      await takeLock(lockFile);
      try {
        const file = await this.load();
        if (edit(file)) await this.write(file);
        return recordOf(file, merchantId)!;
      } finally {
        await releaseLock(lockFile);
      }
    });
    this.last = next.catch(() => undefined);
    return next;
  }

  private async load(): Promise<KeyFile> {
    let text: string;
    try {
      text = await readFile(this.location, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { merchants: new Map() };
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${this.location} is not JSON: the merchant key store is damaged (restore it from a backup)`);
    }
    const file = parsed as { version?: unknown; merchants?: unknown };
    if (file.version !== 1 || typeof file.merchants !== 'object' || file.merchants === null)
      throw new Error(`${this.location} is not a merchant key store of version 1`);
    return { merchants: new Map(Object.entries(file.merchants as Record<string, MerchantEntry>)) };
  }

  private async write(file: KeyFile): Promise<void> {
    const temporary = `${this.location}.${process.pid}.tmp`;
    const handle = await open(temporary, constants.O_CREAT | constants.O_TRUNC | constants.O_WRONLY, 0o600);
    try {
      const document = { version: 1, merchants: Object.fromEntries(file.merchants) };
      await handle.writeFile(`${JSON.stringify(document, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temporary, this.location);
    } catch (err) {
      await rm(temporary, { force: true });
      throw err;
    }
    const dir = await open(dirname(this.location), constants.O_RDONLY);
    await dir.sync().finally(() => dir.close());
  }
}

function recordOf(file: KeyFile, merchantId: string): MerchantKeyRecord | undefined {
  const entry = file.merchants.get(merchantId);
  if (!entry) return undefined;
  return {
    merchantId,
    keys: entry.keys.map((k) => ({ ...k })),
    ...(entry.erasure ? { erasure: { ...entry.erasure } } : {}),
  };
}
