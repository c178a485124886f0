import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../telemetry/logging';

/**
 * Start in any order: a process started while Temporal is unreachable keeps trying with backoff and logs what
 * it waits for, instead of exiting (a crash loop in a cluster, and a start order that matters). What cannot get
 * better by waiting (an unknown namespace, refused credentials) still fails at once.
 */
export interface WaitOptions {
  logger: Logger;
  /** What is awaited, for the log lines: "Temporal at host:7233 (namespace default)". */
  what: string;
  /** Stops waiting (shutdown requested): the wait rejects with the signal's reason. */
  signal?: AbortSignal;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** How often a still-waiting process says so at warn level (every attempt is logged at debug). */
  warnEveryMs?: number;
}

/**
 * gRPC status codes (fixed by the gRPC spec) that waiting does not cure: INVALID_ARGUMENT 3, NOT_FOUND 5 (the
 * namespace), PERMISSION_DENIED 7, UNAUTHENTICATED 16 (credentials refused).
 */
const PERMANENT = new Set<number>([3, 5, 7, 16]);

export function isPermanentTemporalError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' && PERMANENT.has(code);
}

/**
 * Runs `attempt` until it succeeds, with exponential backoff (250 ms ×2 up to 5 s by default, ±20 % jitter so
 * a fleet restarted together does not retry in step). A permanent error is thrown at once.
 */
export async function untilReachable<T>(attempt: () => Promise<T>, options: WaitOptions): Promise<T> {
  const { logger, what, signal } = options;
  const initial = options.initialDelayMs ?? 250;
  const max = options.maxDelayMs ?? 5_000;
  const warnEvery = options.warnEveryMs ?? 30_000;
  const started = Date.now();
  let lastWarn = 0;
  for (let n = 1; ; n++) {
    signal?.throwIfAborted();
    try {
      const result = await attempt();
      if (n > 1) logger.info({ waitedMs: Date.now() - started, attempts: n }, `${what} is reachable`);
      return result;
    } catch (err) {
      if (isPermanentTemporalError(err)) throw err;
      const delay = Math.round(Math.min(max, initial * 2 ** (n - 1)) * (0.8 + Math.random() * 0.4));
      const reason = err instanceof Error ? err.message : String(err);
      if (Date.now() - lastWarn >= warnEvery) {
        lastWarn = Date.now();
        logger.warn(
          { attempt: n, waitedMs: Date.now() - started, nextInMs: delay, reason },
          `waiting for ${what}; not ready until it answers`,
        );
      } else {
        logger.debug({ attempt: n, nextInMs: delay, reason }, `still waiting for ${what}`);
      }
      await sleep(delay, undefined, { signal }).catch(() => signal?.throwIfAborted());
    }
  }
}
