import { collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * prom-client's gauges whose names end in `_total`, which `promtool check metrics` refuses on a non-counter. Each is
 * the sum of a labelled gauge it also exports (`nodejs_active_handles{type}`…): `sum(nodejs_active_handles)`.
 */
const TOTAL_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * The Node process's metrics (`process_*`, `nodejs_*`: the client library's standard names, which shared dashboards
 * expect, so they get no `paylater_` prefix) in `registry`, less the gauges promtool refuses.
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of TOTAL_GAUGES) registry.removeSingleMetric(name);
}
