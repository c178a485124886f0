import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { isoAt } from './clock';
import type { Timers } from './timers';
import type { ApiCallRecord, ApiFault, ApiRoute, Clock } from './types';

interface QueuedFault {
  fault: ApiFault;
  remaining: number;
}

/** Queued API faults; each call consumes at most one, the oldest that matches its route. */
export class FaultQueue {
  private queue: QueuedFault[] = [];

  add(fault: ApiFault): void {
    const remaining = fault.count === 'unlimited' ? Number.POSITIVE_INFINITY : (fault.count ?? 1);
    if (remaining > 0) this.queue.push({ fault: { ...fault }, remaining });
  }

  take(route: ApiRoute): ApiFault | undefined {
    const entry = this.queue.find((q) => q.fault.route === '*' || q.fault.route === route);
    if (!entry) return undefined;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.queue = this.queue.filter((q) => q !== entry);
    return entry.fault;
  }

  clear(): void {
    this.queue = [];
  }
}

export interface ApiGuardDeps {
  faults: FaultQueue;
  calls: ApiCallRecord[];
  clock: Clock;
  timers: Timers;
  /** Requests left unanswered by a 'hang' fault; their sockets are destroyed on stop. */
  hung: Set<Response>;
}

/**
 * First middleware of every bank route: logs the call (its status is recorded when the head is written, so
 * the log is complete by the time the client sees the answer) and applies an injected fault. Faults come before
 * authentication, as a failing gateway in front of the bank would.
 */
export function apiGuard(route: ApiRoute, deps: ApiGuardDeps): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const call: ApiCallRecord = { at: isoAt(deps.clock()), route, method: req.method, path: req.path, status: null };
    deps.calls.push(call);
    recordStatusOnWriteHead(res, call);
    const fault = deps.faults.take(route);
    if (!fault) return next();
    call.fault = fault.kind;
    if (fault.afterActing) call.afterActing = true;
    if (fault.afterActing && fault.kind !== 'latency') {
      replaceAnswer(res, fault, deps);
      return next();
    }
    switch (fault.kind) {
      case 'hang':
        deps.hung.add(res);
        res.on('close', () => deps.hung.delete(res));
        return;
      case 'latency':
        // Answered normally afterwards, even when a reset cut the wait short.
        await deps.timers.sleep(fault.latencyMs ?? 1000);
        if (!res.destroyed) next();
        return;
      case '429':
        res
          .status(429)
          .set('Retry-After', String(fault.retryAfterSeconds ?? 1))
          .json({ error: 'too_many_requests', message: 'Rate limit exceeded (injected fault)' });
        return;
      case '5xx':
        res
          .status(fault.status ?? 503)
          .json({ error: 'server_error', message: 'The bank is unavailable (injected fault)' });
        return;
    }
  };
}

/** The route acts as usual; its answer is replaced by the fault's (or never sent, for 'hang'). */
function replaceAnswer(res: Response, fault: ApiFault, deps: ApiGuardDeps): void {
  const send = res.json.bind(res);
  res.json = (() => {
    if (fault.kind === 'hang') {
      deps.hung.add(res);
      res.on('close', () => deps.hung.delete(res));
      return res;
    }
    if (fault.kind === '429') {
      res.status(429).set('Retry-After', String(fault.retryAfterSeconds ?? 1));
      return send({ error: 'too_many_requests', message: 'Rate limit exceeded after acting (injected fault)' });
    }
    res.status(fault.status ?? 500);
    return send({ error: 'server_error', message: 'The bank failed after acting (injected fault)' });
  }) as Response['json'];
}

function recordStatusOnWriteHead(res: Response, call: ApiCallRecord): void {
  const original = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  (res as unknown as { writeHead: (...args: unknown[]) => Response }).writeHead = (...args: unknown[]) => {
    call.status = typeof args[0] === 'number' ? args[0] : res.statusCode;
    return original(...args);
  };
}
