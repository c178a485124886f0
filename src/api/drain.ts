import type { RequestListener, Server, ServerResponse } from 'node:http';
import type { Logger } from '../telemetry/logging';

/**
 * The API process's shutdown (docs/operations.md "Shutdown and draining"), one phase after the other, never back:
 * - `serving`: normal;
 * - `draining`: SIGTERM received; /readyz answers 503 on both listeners so load balancers take this process out,
 *   every request is still served, each answer with `Connection: close` so keep-alive clients reconnect elsewhere;
 * - `closing`: after SHUTDOWN_DRAIN_DELAY the listeners stop accepting; requests in flight finish, long-polls answer
 *   at once with the state as it stands (as at their timeout);
 * - `expired`: SHUTDOWN_GRACE_PERIOD passed with requests still open: those waiting on Temporal answer 503 (retry)
 *   and every connection is closed a moment later;
 * - `closed`: both listeners are closed.
 */
export type DrainPhase = 'serving' | 'draining' | 'closing' | 'expired' | 'closed';

const PHASES: readonly DrainPhase[] = ['serving', 'draining', 'closing', 'expired', 'closed'];

/** What the routes read of the drain: readiness, and the two moments a waiting request must answer. */
export interface DrainSignals {
  /** True from SIGTERM on: /readyz answers 503. */
  readonly draining: boolean;
  /** Aborted when the listeners stop accepting: a long-poll answers now, as at its timeout. */
  readonly closing: AbortSignal;
  /** Aborted at the hard bound: a request still waiting on Temporal answers 503 before its connection is closed. */
  readonly expired: AbortSignal;
}

/** The drain's state machine (plain: no timer, no socket) and the requests in flight it tells to close. */
export class ApiDrain implements DrainSignals {
  private index = 0;
  private readonly closingController = new AbortController();
  private readonly expiredController = new AbortController();
  private readonly inFlight = new Set<ServerResponse>();

  get phase(): DrainPhase {
    return PHASES[this.index]!;
  }

  get draining(): boolean {
    return this.index > 0;
  }

  get closing(): AbortSignal {
    return this.closingController.signal;
  }

  get expired(): AbortSignal {
    return this.expiredController.signal;
  }

  /** Requests whose answer has not finished. */
  get requestsInFlight(): number {
    return this.inFlight.size;
  }

  /** Moves forward to `phase` (a phase passed on the way counts as reached); false when already there or beyond. */
  advance(phase: DrainPhase): boolean {
    const target = PHASES.indexOf(phase);
    if (target <= this.index) return false;
    this.index = target;
    // Every answer from now on closes its connection; answers already on the wire finish on theirs.
    for (const res of this.inFlight) closeAfter(res);
    if (target >= PHASES.indexOf('closing')) this.closingController.abort(new Error('the listeners are closing'));
    if (target >= PHASES.indexOf('expired')) this.expiredController.abort(new Error('the grace period is over'));
    return true;
  }

  /** The request listener, with its requests followed: while draining, every answer says `Connection: close`. */
  track(listener: RequestListener): RequestListener {
    return (req, res) => {
      this.inFlight.add(res);
      res.once('close', () => this.inFlight.delete(res));
      if (this.draining) closeAfter(res);
      listener(req, res);
    };
  }
}

function closeAfter(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

/** What the last answers may take once the grace period is over, before every connection is closed. */
export const EXPIRY_MARGIN_MS = 250;

export interface DrainTiming {
  /** SHUTDOWN_DRAIN_DELAY: how long the listeners keep accepting after /readyz turned 503. */
  delayMs: number;
  /** SHUTDOWN_GRACE_PERIOD: how long requests in flight may take once the listeners stopped accepting. */
  graceMs: number;
}

/**
 * Drains `servers` through the phases above: 503 readiness at once, the delay, then stop accepting, let requests
 * in flight finish (idle keep-alive connections closed as they become idle), and at the grace period's end tell the
 * rest to answer and close every connection. Resolves once every listener is closed: after delay + grace + 250 ms at
 * the latest.
 */
export async function drainListeners(
  drain: ApiDrain,
  servers: readonly Server[],
  timing: DrainTiming,
  logger: Logger,
): Promise<void> {
  drain.advance('draining');
  if (timing.delayMs > 0) {
    logger.info({ drainDelayMs: timing.delayMs }, 'draining: /readyz answers 503; still serving until the delay ends');
    await sleep(timing.delayMs);
  }
  drain.advance('closing');
  const closed = Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  const closeIdle = () => servers.forEach((server) => server.closeIdleConnections());
  closeIdle();
  // A connection whose last answer just went out is idle, and close() does not look at it again.
  const sweep = setInterval(closeIdle, 50);
  try {
    logger.info(
      { requestsInFlight: drain.requestsInFlight, gracePeriodMs: timing.graceMs },
      'listeners closed to new connections; finishing the requests in flight',
    );
    if (!(await within(closed, timing.graceMs))) {
      logger.warn(
        { requestsInFlight: drain.requestsInFlight, gracePeriodMs: timing.graceMs },
        'grace period over: answering what still waits, then closing every connection',
      );
      drain.advance('expired');
      await within(closed, EXPIRY_MARGIN_MS);
      servers.forEach((server) => server.closeAllConnections());
      await closed;
    }
  } finally {
    clearInterval(sweep);
  }
  drain.advance('closed');
}

/** True when `promise` settled within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
