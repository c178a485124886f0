import { mkdirSync, statSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Imported first by src/main.ts (`npm start`): Node's module compile cache (node:module enableCompileCache, Node ≥
 * 22.1) keeps V8's compiled code of the modules loaded, so a start after the first does not compile them again
 * (docs/decisions/0033-npm-start-loads-while-temporal-boots.md). Node checks each entry against its source and its own
 * version, so a changed file or another Node is compiled afresh. NODE_COMPILE_CACHE (Node's own variable) wins when
 * set.
 */
export const DEFAULT_COMPILE_CACHE_DIR = join(tmpdir(), `paylater-compile-cache-${process.getuid?.() ?? 'user'}`);

/**
 * Whether `dir` is safe to cache in: created here (owner only) or already there, a directory, this user's, and
 * writable by no one else (another user could plant compiled code in it). Never recursive: a recursive mkdir under a
 * pseudo file system (/proc) spins forever in Node 22, and Node's own enableCompileCache does the same there.
 */
export function usableCacheDir(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false;
  }
  try {
    const st = statSync(dir);
    const uid = process.getuid?.();
    return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Turns the cache on; a folder that is not usable leaves it off and start-up goes on as before. */
export function enableCompileCache(dir = DEFAULT_COMPILE_CACHE_DIR): { enabled: boolean; dir?: string } {
  const { enableCompileCache: enable, constants } = nodeModule as {
    enableCompileCache?: (dir?: string) => { status: number; directory?: string };
    constants?: { compileCacheStatus?: { ENABLED: number; ALREADY_ENABLED: number } };
  };
  if (typeof enable !== 'function' || !constants?.compileCacheStatus) return { enabled: false };
  const fromEnv = process.env.NODE_COMPILE_CACHE;
  if (!fromEnv && !usableCacheDir(dir)) return { enabled: false };
  try {
    const { status, directory } = enable(fromEnv ? undefined : dir);
    const { ENABLED, ALREADY_ENABLED } = constants.compileCacheStatus;
    return { enabled: status === ENABLED || status === ALREADY_ENABLED, dir: directory };
  } catch {
    return { enabled: false };
  }
}

enableCompileCache();
