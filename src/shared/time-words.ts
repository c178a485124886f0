/**
 * Durations and instants as a person reads them, for the Web UI's details (src/workflows/finance-application/details.ts)
 * and the merchant console (src/api/resources/console/views.ts). Plain code, no clock: the caller passes the instants
 * (test/shared/time-words.test.ts).
 */

/** A duration: `40 s`, `15 min`, `2 h 30 min`, `30 days`. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  const d = Math.round(h / 24);
  return `${d} day${d === 1 ? '' : 's'}`;
}

/** An instant in UTC to the second (`2026-11-28 14:03:12 UTC`): the text a browser without script shows. */
export function utcText(at: string | number): string {
  const ms = typeof at === 'number' ? at : Date.parse(at);
  return Number.isFinite(ms) ? `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC` : String(at);
}

/**
 * `at` relative to an anchor, in words: `40 s after it was created`, `2 min before the deadline`, or with the anchor
 * `now`: `in 40 s`, `3 min ago`. Undefined when either instant is not a time.
 */
export function relativePhrase(
  at: string | number,
  anchor: { at: string | number; what?: string },
): string | undefined {
  const a = typeof at === 'number' ? at : Date.parse(at);
  const b = typeof anchor.at === 'number' ? anchor.at : Date.parse(anchor.at);
  if (!Number.isFinite(a) || !Number.isFinite(b)) return undefined;
  const d = humanDuration(Math.abs(a - b));
  if (anchor.what === undefined) return a >= b ? `in ${d}` : `${d} ago`;
  return `${d} ${a >= b ? 'after' : 'before'} ${anchor.what}`;
}
