import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { MetricsExporterConfig, State, Worker } from '@temporalio/worker';
import { Counter, Registry } from 'prom-client';
import type { Logger } from '../telemetry/logging';
import { collectProcessMetrics } from '../telemetry/process-metrics';
import { WEBHOOK_DELAY_BUCKETS_SECONDS, WorkflowMetric } from '../shared/metric-names';

/**
 * The worker process's own listener on WORKER_METRICS_PORT (default 9464):
 * - `/metrics`: the SDK's series (prefixed `temporal_`) and the workflows' business metrics (`metricMeter`), both
 *   exported by the Temporal Runtime's Prometheus exporter, followed by this process's prom-client registry
 *   (activities: token requests, merchant callbacks; Node process metrics);
 * - `/healthz` (live) and `/readyz` (both Workers RUNNING, their task slots and last task received; 503 `draining`
 *   from SIGTERM on).
 *
 * Why a node:http server in front of the Runtime's exporter: the exporter (Rust core) serves only `/metrics` and
 * nothing else, so it cannot carry the health routes nor prom-client's registry. It binds a loopback port of its
 * own (picked free at start, see freeLoopbackPort) and this server fetches it at each scrape and appends the
 * registry: one port, one scrape job, one set of series per worker process. The two parts share no metric name
 * (`temporal_*` and the workflows' `paylater_*` from the Runtime, the activities' `paylater_*` and `process_*`/
 * `nodejs_*` from prom-client); the Runtime's label names are made snake_case on the way (snakeCaseLabelNames).
 */

/** Runtime telemetry for a worker process: Prometheus on `bindAddress`, counters with `_total`, durations in seconds. */
export function temporalMetricsOptions(bindAddress: string): MetricsExporterConfig {
  return {
    metricPrefix: 'temporal_',
    prometheus: {
      bindAddress,
      countersTotalSuffix: true,
      useSecondsForDurations: true,
      histogramBucketOverrides: { [WorkflowMetric.webhookDelay]: WEBHOOK_DELAY_BUCKETS_SECONDS },
    },
  };
}

/**
 * SDK series this project relies on (alerts, dashboard): names as exported with temporalMetricsOptions (histograms
 * also as _bucket/_sum/_count). test/worker/worker-metrics.test.ts checks each appears on a running worker.
 */
export const TEMPORAL_SDK_METRICS = [
  'temporal_activity_schedule_to_start_latency',
  'temporal_activity_execution_latency',
  'temporal_activity_execution_failed_total',
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_workflow_task_execution_latency',
  'temporal_workflow_completed_total',
  'temporal_workflow_failed_total',
  'temporal_sticky_cache_size',
  'temporal_worker_task_slots_available',
  'temporal_worker_task_slots_used',
  'temporal_num_pollers',
  'temporal_request_failure_total',
  'temporal_long_request_failure_total',
] as const;

/** prom-client metrics of a worker process (activities and the bank client); one registry, no global one. */
export function createWorkerMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  return {
    registry,
    /** Bank OAuth2 token requests by outcome (ok, refused, invalid_response, failed): a cache that works asks rarely. */
    tokenRequests: new Counter({
      name: 'paylater_bank_token_requests_total',
      help: 'Bank token requests made by the client-credentials token provider, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    /** Every merchant callback attempt, by event type and outcome (delivered, unavailable, rejected, not_allowed, error). */
    merchantCallbacks: new Counter({
      name: 'paylater_merchant_callbacks_total',
      help: 'Merchant callback attempts, by event type and outcome',
      labelNames: ['event', 'outcome'] as const,
      registers: [registry],
    }),
    /** Callbacks given up at the end of their merchant's retry window (src/shared/undelivered-callbacks.ts). */
    callbacksGivenUp: new Counter({
      name: 'paylater_callbacks_given_up_total',
      help: "Merchant callbacks given up at the end of their merchant's retry window, by merchant",
      labelNames: ['merchant'] as const,
      registers: [registry],
    }),
  };
}
export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/** What the health report reads of a process's two Workers (createWorker's MonitoredWorkers). */
export interface MonitoredWorkers {
  workers: { main: Worker; bankReads: Worker };
  /** Both workers' state when they agree; FAILED if either failed; otherwise the one further from RUNNING. */
  getState(): State;
}

/** One Worker's health: its state, task slots in use of the configured ones, and when it last received a task. */
export interface WorkerHealth {
  taskQueue: string;
  state: State;
  workflowPoller?: string;
  activityPoller: string;
  slots: {
    workflowTasks?: { used: number; max?: number };
    activities: { used: number; max?: number };
  };
  cachedWorkflows?: number;
  /** Last time a poll returned a task (ISO); undefined: none since start. Empty long polls are not seen by the SDK. */
  lastTaskReceivedAt?: string;
}

/**
 * Watches a worker pair for /readyz: the SDK reports no "last successful poll", so each Worker's in-flight
 * counters are followed and a rise means a poll just returned a task.
 */
export class WorkerHealthWatch {
  private readonly lastTask = new Map<Worker, number>();

  constructor(
    readonly workers: MonitoredWorkers,
    private readonly now: () => number = Date.now,
  ) {
    for (const worker of [workers.workers.main, workers.workers.bankReads]) {
      for (const inFlight of [worker.numInFlightActivations$, worker.numInFlightActivities$]) {
        let previous = 0;
        inFlight.subscribe((n) => {
          if (n > previous) this.lastTask.set(worker, this.now());
          previous = n;
        });
      }
    }
  }

  report(): { status: 'ready' | 'not_ready'; state: State; workers: { main: WorkerHealth; bankReads: WorkerHealth } } {
    const state = this.workers.getState();
    const { main, bankReads } = this.workers.workers;
    return {
      status: state === 'RUNNING' ? 'ready' : 'not_ready',
      state,
      workers: { main: this.health(main, true), bankReads: this.health(bankReads, false) },
    };
  }

  private health(worker: Worker, workflows: boolean): WorkerHealth {
    const status = worker.getStatus();
    const options = worker.options;
    const last = this.lastTask.get(worker);
    return {
      taskQueue: options.taskQueue,
      state: status.runState,
      ...(workflows ? { workflowPoller: status.workflowPollerState } : {}),
      activityPoller: status.activityPollerState,
      slots: {
        ...(workflows
          ? {
              workflowTasks: {
                used: status.numInFlightWorkflowActivations,
                max: slotMax(options.tuner, 'workflowTaskSlotSupplier'),
              },
            }
          : {}),
        activities: { used: status.numInFlightActivities, max: slotMax(options.tuner, 'activityTaskSlotSupplier') },
      },
      ...(workflows ? { cachedWorkflows: status.numCachedWorkflows } : {}),
      ...(last !== undefined ? { lastTaskReceivedAt: new Date(last).toISOString() } : {}),
    };
  }
}

/**
 * The most slots a worker hands out: a fixed-size supplier's count (what maxConcurrent…Executions compile to), or a
 * resource-based tuner's maximum for the kind (WORKER_TUNER=resource-based); undefined otherwise.
 */
function slotMax(
  tuner: unknown,
  supplier: 'workflowTaskSlotSupplier' | 'activityTaskSlotSupplier',
): number | undefined {
  const t = tuner as
    Record<string, { type?: string; numSlots?: number; maximumSlots?: number } | undefined> | undefined;
  const s = t?.[supplier];
  if (s?.type === 'fixed-size') return s.numSlots;
  return t?.[supplier.replace('Supplier', 'Options')]?.maximumSlots;
}

export interface WorkerMetricsServer {
  server: Server;
  /** The bound port (WORKER_METRICS_PORT, or the free one picked for 0). */
  port: number;
  /** Sets the workers /readyz reports on (until then it answers 503 "starting"). */
  setWorkers(workers: MonitoredWorkers | undefined): void;
  /** From now on /readyz answers 503 `draining` (SIGTERM: the process is shutting down), with the workers' report. */
  setDraining(): void;
  close(): Promise<void>;
}

/** How long a scrape waits for the Runtime's exporter (loopback; it answers in milliseconds). */
const RUNTIME_SCRAPE_TIMEOUT_MS = 5_000;

/**
 * Starts the worker's listener. `runtimeMetricsUrl`: the Runtime exporter's `/metrics` (absent: the Runtime exports
 * nothing, for example a test runtime; the prom-client registry is still served).
 */
export async function startWorkerMetricsServer(options: {
  port: number;
  host?: string;
  registry: Registry;
  runtimeMetricsUrl?: string;
  logger: Logger;
}): Promise<WorkerMetricsServer> {
  let watch: WorkerHealthWatch | undefined;
  let draining = false;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, 'application/json', '{"error":"GET only"}');
    if (path === '/healthz') return send(res, 200, 'application/json', JSON.stringify({ status: 'ok' }));
    if (path === '/readyz') {
      if (!watch) {
        const body = draining ? { status: 'draining', state: 'STOPPING' } : { status: 'not_ready', state: 'STARTING' };
        return send(res, 503, 'application/json', JSON.stringify(body));
      }
      const report = watch.report();
      if (draining) return send(res, 503, 'application/json', JSON.stringify({ ...report, status: 'draining' }));
      return send(res, report.status === 'ready' ? 200 : 503, 'application/json', JSON.stringify(report));
    }
    if (path === '/metrics') {
      const parts: string[] = [];
      if (options.runtimeMetricsUrl) {
        try {
          const runtime = await fetch(options.runtimeMetricsUrl, {
            signal: AbortSignal.timeout(RUNTIME_SCRAPE_TIMEOUT_MS),
          });
          if (!runtime.ok) throw new Error(`HTTP ${runtime.status}`);
          parts.push(snakeCaseLabelNames(await runtime.text()));
        } catch (err) {
          // The SDK's series missing from one scrape shows as a gap; the process's own metrics still go out.
          options.logger.warn({ err: (err as Error).message }, 'Temporal runtime metrics unavailable for this scrape');
        }
      }
      parts.push(await options.registry.metrics());
      return send(res, 200, options.registry.contentType, parts.map((p) => p.trimEnd()).join('\n') + '\n');
    }
    return send(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      options.logger.error({ err }, 'worker metrics request failed');
      if (!res.headersSent) send(res, 500, 'application/json', '{"error":"internal error"}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE' ? new Error(`port ${options.port} is already in use (set WORKER_METRICS_PORT)`) : err,
      ),
    );
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  server.requestTimeout = 30_000;
  return {
    server,
    port: (server.address() as { port: number }).port,
    setWorkers(workers) {
      watch = workers ? new WorkerHealthWatch(workers) : undefined;
    },
    setDraining() {
      draining = true;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The exposition text with every label name in snake_case. The TypeScript SDK tags the workflows' metricMeter series
 * with `namespace`, `taskQueue` (the Worker's meter) and `workflowType` (the workflow's): those leave as
 * `task_queue` and `workflow_type`, the names the SDK's core series use. Label values (quoted, with `\\`, `\"` and
 * `\n` escapes) are copied as they are; a line that does not parse is left unchanged.
 */
export function snakeCaseLabelNames(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      const open = line.indexOf('{');
      if (line.startsWith('#') || open < 0) return line;
      let out = line.slice(0, open + 1);
      let i = open + 1;
      while (i < line.length && line[i] !== '}') {
        const eq = line.indexOf('="', i);
        if (eq < 0) return line;
        out +=
          line
            .slice(i, eq)
            .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
            .toLowerCase() + '="';
        i = eq + 2;
        while (i < line.length && line[i] !== '"') {
          if (line[i] === '\\') out += line[i++];
          out += line[i++];
        }
        if (i >= line.length) return line;
        out += '"';
        i++;
        if (line[i] === ',') out += line[i++];
      }
      return out + line.slice(i);
    })
    .join('\n');
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}
