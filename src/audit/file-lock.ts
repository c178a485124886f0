import { open, readFile, rm } from 'node:fs/promises';

/**
 * A writer's lock on a file of one machine (`<file>.lock`, created exclusively, holding the writer's pid): the audit
 * trail's file (./file-audit-log.ts) and the merchant key store's (src/keys/file-merchant-key-store.ts). Local disks
 * only, not network file systems.
 */

/** The locks this process holds now: one with our pid that is not here is a previous run's. */
const heldLocks = new Set<string>();

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
  heldLocks.delete(lockFile);
  await rm(lockFile, { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
