import { collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * prom-client's gauges whose names end in `_total`, which `promtool check metrics` refuses on a non-counter. Each is
 * the sum of a labelled gauge it also exports (`nodejs_active_handles{type}`…): `sum(nodejs_active_handles)`.
 */
const TOTAL_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * How often the event-loop delay is sampled (`nodejs_eventloop_lag_*`), in ms. prom-client's default, 10, wakes the
 * process 100 times a second: about 13 ms of CPU a second on an idle API, a third of its CPU per webhook at 40 a second
 * (docs/benchmarks.md, "The receiver"). At 100 a stall of 100 ms or more is always seen, and a shorter one in
 * proportion to its length: what a dashboard of lag needs.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * The Node process's metrics (`process_*`, `nodejs_*`: the client library's standard names, which shared dashboards
 * expect, so they get no `paylater_` prefix) in `registry`, less the gauges promtool refuses.
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  for (const name of TOTAL_GAUGES) registry.removeSingleMetric(name);
}
