import type { WebhookDelivery } from '../../src/sandbox/types';
import type { Sample } from '../harness/exposition';

/**
 * Timing figures of a chaos run, from the harness's own probes around each Temporal restart and from the bank's
 * record of its webhook attempts. Pure: the scenario collects the samples.
 */

export type ProbeRoute = 'finance-webhook' | 'account-webhook' | 'readyz';

export interface ProbeSample {
  route: ProbeRoute;
  /** Index of the API process probed. */
  api: number;
  /** Epoch ms the request was sent. */
  startedAt: number;
  /** Time to the answer (or the error). */
  ms: number;
  /** HTTP status; null when no answer (connection refused, timeout). */
  status: number | null;
}

/** One Temporal restart as the harness saw it (epoch ms). */
export interface Outage {
  signal: string;
  /** The signal was sent. */
  stoppedAt: number;
  /** The server answers again: the harness's own describeNamespace on a new connection succeeded. */
  readyAt: number;
}

/** The slowest answer with `status` per route (ms), or undefined when none. */
export function slowest(samples: ProbeSample[], route: ProbeRoute, status?: number): number | undefined {
  const ms = samples.filter((s) => s.route === route && (status === undefined || s.status === status)).map((s) => s.ms);
  return ms.length ? Math.max(...ms) : undefined;
}

/**
 * How long after Temporal answered again each API first answered `route` with something other than 503 (the
 * receiver: 202 or 200; /readyz: 200): the completion of its first such answer started after the stop, minus
 * readyAt. Negative when the API got through before the harness's own check did. Undefined: never within the samples.
 */
export function backAfter(samples: ProbeSample[], route: ProbeRoute, outage: Outage, api: number): number | undefined {
  const ok = samples
    .filter(
      (s) =>
        s.route === route &&
        s.api === api &&
        s.startedAt >= outage.stoppedAt &&
        s.status !== null &&
        s.status >= 200 &&
        s.status < 300,
    )
    .map((s) => s.startedAt + s.ms);
  return ok.length ? Math.min(...ok) - outage.readyAt : undefined;
}

export interface AttemptFigures {
  copies: number;
  dropped: number;
  attempts: number;
  byStatus: Record<string, number>;
  /** Attempts without an answer (the bank's per-attempt timeout, or a refused connection). */
  noAnswer: number;
  /** Copies whose every attempt failed. */
  failed: number;
}

/** The bank's view of its webhook attempts, per kind: answers by status, and attempts that got no answer. */
export function attemptFigures(deliveries: WebhookDelivery[]): Map<string, AttemptFigures> {
  const out = new Map<string, AttemptFigures>();
  for (const d of deliveries) {
    const f = out.get(d.kind) ?? { copies: 0, dropped: 0, attempts: 0, byStatus: {}, noAnswer: 0, failed: 0 };
    f.copies += 1;
    if (d.outcome === 'dropped') f.dropped += 1;
    if (d.outcome === 'failed') f.failed += 1;
    for (const a of d.attempts) {
      f.attempts += 1;
      if (a.status === null) f.noAnswer += 1;
      else f.byStatus[a.status] = (f.byStatus[a.status] ?? 0) + 1;
    }
    out.set(d.kind, f);
  }
  return out;
}

/**
 * Answers of `route` with `status`, by the API's own clock (its paylater_http_request_duration_seconds histogram), split at
 * `edges` (seconds, each one of the histogram's bucket bounds): counts per interval, the last one open.
 */
export function durationsByApi(
  samples: Sample[],
  route: string,
  status: string,
  edges: number[],
): { upTo: number | null; count: number }[] {
  const cumulative = (le: string) =>
    samples
      .filter(
        (s) =>
          s.name === 'paylater_http_request_duration_seconds_bucket' &&
          s.labels.route === route &&
          s.labels.status === status &&
          s.labels.le === le,
      )
      .reduce((n, s) => n + s.value, 0);
  const bounds = [...edges.map((e) => String(e)), '+Inf'];
  let below = 0;
  return bounds.map((le) => {
    const at = cumulative(le);
    const count = at - below;
    below = at;
    return { upTo: le === '+Inf' ? null : Number(le), count };
  });
}
