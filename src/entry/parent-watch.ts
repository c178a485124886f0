/**
 * How a process ends with the one that started it when that one dies without signalling it (SIGKILL, or an npm that
 * does not forward signals): it is reparented, which this notices by polling `process.ppid` (Node has no event for
 * it; Linux's prctl(PR_SET_PDEATHSIG) is not reachable from JavaScript). Used by every entry point started by an npm
 * script (src/entry/run-entry.ts) and by jest's main process under `npm test` (test/setup/global-setup.ts, with
 * scripts/jest.mjs, which polls its own parent the same way).
 */
export function watchParent(
  onGone: (parentPid: number) => void,
  options: {
    /** The parent to outlive; the current one by default. Given and already gone: `onGone` runs at the first poll. */
    parentPid?: number;
    everyMs?: number;
  } = {},
): () => void {
  const parent = options.parentPid ?? process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone(parent);
  }, options.everyMs ?? 500);
  // Never what keeps the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
