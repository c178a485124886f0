import { open, readFile, rm } from 'node:fs/promises';

/**
 * A writer's lock on a file of one machine (`<file>.lock`, created exclusively, holding the writer's pid): the audit
 * trail's file (./file-audit-log.ts) and the merchant key store's (src/keys/file-merchant-key-store.ts). Local disks
 * only, not network file systems.
 */

/** The locks this process holds now: one with our pid that is not here is a previous run's. */
const heldLocks = new Set<string>();

/** Per file, the end of the last turn this process's writers queued (inTurn). */
const turns = new Map<string, Promise<void>>();

/**
 * Runs `work` after every earlier turn this process queued for `file` has settled: writers of one process (two
 * stores opened on one path) take turns, so the lock file only has other processes to keep out (two writers of one
 * pid could not tell their locks apart). Resolves or rejects as `work` does.
 */
export function inTurn<T>(file: string, work: () => Promise<T>): Promise<T> {
  const next = (turns.get(file) ?? Promise.resolve()).then(work);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  turns.set(file, settled);
  void settled.then(() => {
    if (turns.get(file) === settled) turns.delete(file);
  });
  return next;
}

/** How long an append waits for another writer's lock before it fails (the action with it). */
const LOCK_WAIT_MS = 5_000;

/**
 * The writer's lock for one append: created exclusively with our pid. A lock whose process is gone is removed (so is
 * one with our own pid that this process does not hold: a previous run's, a container's pid 1).
 */
export async function takeLock(lockFile: string): Promise<void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(lockFile, 'wx', 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      heldLocks.add(lockFile);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const text = await readFile(lockFile, 'utf8').catch(() => undefined);
    const holder = Number(text?.trim());
    // An empty lock is one being written this instant: wait for it like a live one.
    const live =
      text === '' ||
      (holder === process.pid ? heldLocks.has(lockFile) : Number.isSafeInteger(holder) && holder > 0 && alive(holder));
    if (!live) {
      await rm(lockFile, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${lockFile} is held by pid ${holder} for more than ${LOCK_WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Gives the lock up (after takeLock). */
export async function releaseLock(lockFile: string): Promise<void> {
  // Removed before it is forgotten: meanwhile another process sees our live pid and waits.
  await rm(lockFile, { force: true }).catch(() => undefined);
  heldLocks.delete(lockFile);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
