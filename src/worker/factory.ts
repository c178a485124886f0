/**
 * The worker's factories: `createWorker` (the two Temporal Workers of one process: the main task queue and the
 * rate-limited bank-reads queue) and `startWorker` (everything a worker process runs, wired from configuration).
 * Used by the entry points (src/worker.ts, src/main.ts), the tests, the benches and chaos.
 */
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import {
  NativeConnection,
  ResourceBasedController,
  Worker,
  type State,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { DEFAULT_WORKER_SHUTDOWN_GRACE_MS, merchantsOnDevelopmentSecret, type WorkerTuning } from '../config';
import type { WorkerConfig } from '../config/worker';
import { merchantsOnLegacyPayload } from '../config/merchants';
import { callbackLedgerAccess } from '../client/undelivered-callbacks';
import { readCallbackSecretGenerations } from '../client/merchant-secrets';
import {
  createActivities,
  createBankClient,
  callbackDispatchers,
  ReadPacer,
  WebhookEvidence,
  type Activities,
  type BankClientHandle,
} from '../activities';
import { bankClientLogger, type Logger } from '../telemetry/logging';
import { activityLogIds } from '../activities/log-attributes';
import { workerTracingOptions, type Tracing } from '../telemetry/tracing';
import { BANK_READ_ACTIVITIES, bankReadsTaskQueue } from '../shared/task-queues';
import { createWorkerMetrics, startWorkerMetricsServer, type WorkerMetricsServer } from './metrics';
import { resolveCacheSize } from './sizing';
import { versionString, type DeploymentVersion } from '../temporal/worker-deployment';
import { applicationRecords } from '../temporal/application-records';

/**
 * Past the grace time, what cancelled activities and the last workflow tasks may take before the SDK gives up on a
 * graceful stop (GracefulShutdownPeriodExpiredError): the process then exits all the same, so a worker's shutdown is
 * bounded by WORKER_SHUTDOWN_GRACE_TIME + this.
 */
export const SHUTDOWN_FORCE_MARGIN_MS = 5_000;

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  /** TASK_QUEUE; the bank reads are served on bankReadsTaskQueue(taskQueue). */
  taskQueue: string;
  activities: Activities;
  /**
   * createDataConverter(...): the payload codec and the failure converter, the same as every client's. Both
   * workers use it; a prebuilt bundle must have been built with its failure converter (buildWorkflowBundle does).
   */
  dataConverter: DataConverter;
  /** A prebuilt bundle (bundleWorkflowCode) instead of bundling src/workflows at start. */
  workflowBundle?: WorkflowBundleOption;
  /** Sizing (config.worker; an unset cache from the memory limit: src/worker/sizing.ts); the SDK's defaults where absent. */
  tuning?: WorkerTuning;
  /** Ceiling on bank status reads per second across ALL workers (config.bank.maxReadsPerSecond); unset: none. */
  bankMaxReadsPerSecond?: number;
  /** The process's tracing (src/telemetry): activity spans and the workflow spans' sink; undefined: off. */
  tracing?: Tracing;
  /**
   * The Worker Deployment Version both workers join (Worker Versioning: docs/deploying.md); new
   * workflows default to PINNED on it. Undefined: unversioned workers (tests that are not about versioning).
   */
  deployment?: DeploymentVersion;
  /**
   * WORKER_SHUTDOWN_GRACE_TIME (config.shutdown.workerGraceMs): how long a stopping worker lets running activities
   * finish before they are cancelled (their attempt fails and Temporal retries it on another worker). Default 10 s.
   */
  shutdownGraceMs?: number;
}

/** The Workers of one worker process, run and stopped as one. */
export interface PaylaterWorkers {
  workers: {
    /** TASK_QUEUE: every workflow and every activity. */
    main: Worker;
    /** bankReadsTaskQueue(TASK_QUEUE): the bank status reads only, under the task queue's rate limit. */
    bankReads: Worker;
  };
  /** Runs both; settles once both have stopped, rejecting if either failed (the other is then shut down). */
  run(): Promise<void>;
  /** Starts a graceful shutdown of whichever is running (no-op otherwise). */
  shutdown(): void;
  /** Both workers' state when they agree; FAILED if either failed; otherwise the one further from RUNNING. */
  getState(): State;
}

/**
 * The worker process's two Workers (src/shared/task-queues.ts):
 * - main, on TASK_QUEUE: every workflow and ALL activities, the bank reads included, since runs started before
 *   the bank-reads queue existed still schedule their reads here (those are not under the ceiling);
 * - bank-reads, on bankReadsTaskQueue(TASK_QUEUE): only BANK_READ_ACTIVITIES, with the server-side
 *   maxTaskQueueActivitiesPerSecond, so the ceiling holds across every worker, however many run.
 */
export async function createWorker(deps: WorkerDeps): Promise<PaylaterWorkers> {
  const tuning = deps.tuning;
  // One controller for the process's two Workers: one memory and CPU target for both (resource-based only).
  const controller =
    tuning?.tuner === 'resource-based'
      ? ResourceBasedController.create({
          targetMemoryUsage: tuning.targetMemoryUsage,
          targetCpuUsage: tuning.targetCpuUsage,
        })
      : undefined;
  const activityTuning: Partial<WorkerOptions> = tuning
    ? {
        ...(controller
          ? {
              tuner: {
                controller,
                activityTaskSlotOptions: { maximumSlots: tuning.maxConcurrentActivityTaskExecutions },
                workflowTaskSlotOptions: { maximumSlots: tuning.maxConcurrentWorkflowTaskExecutions },
              },
            }
          : { maxConcurrentActivityTaskExecutions: tuning.maxConcurrentActivityTaskExecutions }),
        // 1.24 ignores the older maxConcurrentActivityTaskPolls: the poller behaviour is what core reads.
        activityTaskPollerBehavior: { type: 'simple-maximum', maximum: tuning.maxActivityTaskPollers },
      }
    : {};
  const tracing = workerTracingOptions(deps.tracing);
  const graceMs = deps.shutdownGraceMs ?? DEFAULT_WORKER_SHUTDOWN_GRACE_MS;
  const common = {
    connection: deps.connection,
    // The bank's ids on every activity log line; with tracing, the activity spans and their trace ids.
    interceptors: { activity: [activityLogIds, ...tracing.activityInterceptors] },
    sinks: tracing.sinks,
    namespace: deps.namespace,
    dataConverter: deps.dataConverter,
    shutdownGraceTime: graceMs,
    shutdownForceTime: graceMs + SHUTDOWN_FORCE_MARGIN_MS,
    ...activityTuning,
    // Both workers are one version: a pinned run's activities on the bank-reads queue go to its own build's workers.
    ...(deps.deployment
      ? ({
          workerDeploymentOptions: {
            useWorkerVersioning: true,
            version: deps.deployment,
            // Every type (src/shared/versioning.ts); not per type: the server refuses that from unversioned workers.
            defaultVersioningBehavior: 'PINNED',
          },
        } satisfies Partial<WorkerOptions>)
      : {}),
  };
  const reads: readonly string[] = BANK_READ_ACTIVITIES;
  const bankReadActivities = Object.fromEntries(
    Object.entries(deps.activities).filter(([name]) => reads.includes(name)),
  );

  // The activity-only worker first: no bundle, so it cannot fail on workflow code; disposed if main fails.
  const bankReads = await Worker.create({
    ...common,
    taskQueue: bankReadsTaskQueue(deps.taskQueue),
    activities: bankReadActivities,
    ...(deps.bankMaxReadsPerSecond !== undefined
      ? { maxTaskQueueActivitiesPerSecond: deps.bankMaxReadsPerSecond }
      : {}),
  });
  let main: Worker;
  try {
    main = await Worker.create({
      ...common,
      taskQueue: deps.taskQueue,
      ...(deps.workflowBundle
        ? { workflowBundle: deps.workflowBundle }
        : { workflowsPath: require.resolve('../workflows') }),
      activities: deps.activities,
      ...(tuning
        ? ({
            maxCachedWorkflows: resolveCacheSize(tuning).size,
            ...(controller ? {} : { maxConcurrentWorkflowTaskExecutions: tuning.maxConcurrentWorkflowTaskExecutions }),
            workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: tuning.maxWorkflowTaskPollers },
          } satisfies Partial<WorkerOptions>)
        : {}),
    });
  } catch (err) {
    // A created Worker holds the connection until it has run: run it to a stop at once.
    await bankReads.runUntil(Promise.resolve());
    throw err;
  }
  return workerPair(main, bankReads);
}

function workerPair(main: Worker, bankReads: Worker): PaylaterWorkers {
  const all = [main, bankReads];
  const shutdown = () => {
    for (const worker of all) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    workers: { main, bankReads },
    async run() {
      // One failing stops the other, so the process never serves half its queues.
      const results = await Promise.allSettled(
        all.map((worker) =>
          worker.run().catch((err: unknown) => {
            shutdown();
            throw err;
          }),
        ),
      );
      const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
    },
    shutdown,
    getState() {
      const [a, b] = [main.getState(), bankReads.getState()];
      if (a === b) return a;
      if (a === 'FAILED' || b === 'FAILED') return 'FAILED';
      if (a === 'INITIALIZED' || b === 'INITIALIZED') return 'INITIALIZED';
      return 'STOPPING';
    },
  };
}

export interface BankEndpoints {
  authUrl: string;
  baseUrl: string;
}

export interface RunningWorker {
  workers: PaylaterWorkers;
  /** The Worker Deployment Version the workers joined; undefined: unversioned. */
  deployment?: DeploymentVersion;
  /** The listener on WORKER_METRICS_PORT: /metrics, /healthz, /readyz (src/worker/metrics.ts). */
  metricsServer: WorkerMetricsServer;
  /** Settles when both workers have stopped (after stop(), or on a fatal error). */
  done: Promise<void>;
  /**
   * Drains the workers (/readyz 503; no new task; running activities get WORKER_SHUTDOWN_GRACE_TIME, then are
   * cancelled and retried elsewhere), then closes the bank client's pools and the metrics listener.
   */
  stop(): Promise<void>;
}

/**
 * The worker's bank client. Its logger speaks Temporal's `(message, meta)` (src/activities/bank/logger.ts): a pino
 * logger handed over as such would take meta for a format argument and drop the status and the cause.
 */
export function createWorkerBankClient(
  config: WorkerConfig,
  bank: BankEndpoints,
  logger: Logger,
  onTokenRequest?: Parameters<typeof createBankClient>[0]['onTokenRequest'],
): BankClientHandle {
  return createBankClient({
    authUrl: bank.authUrl,
    baseUrl: bank.baseUrl,
    clientId: config.bank.clientId,
    clientSecret: config.bank.clientSecret,
    logger: bankClientLogger(logger.child({ component: 'bank-client' })),
    onTokenRequest,
  });
}

/** Said at every start: merchants signed with the public development master, or sent the deprecated body. */
function warnAboutCallbackSigning(config: WorkerConfig, logger: Logger): void {
  const onDevelopmentSecret = merchantsOnDevelopmentSecret(config);
  if (onDevelopmentSecret.length > 0) {
    // The secret itself never reaches a log; `npm start` prints it once in its banner (embedded stack only).
    logger.warn(
      { merchants: onDevelopmentSecret },
      `CALLBACK_SIGNING_MASTER_SECRETS unset: callbacks of merchant${onDevelopmentSecret.length > 1 ? 's' : ''} ` +
        `${onDevelopmentSecret.join(', ')} are signed with secrets derived from the public development master ` +
        '(set CALLBACK_SIGNING_MASTER_SECRETS, or give them callbackSigningSecrets in MERCHANTS_FILE)',
    );
  }
  const onLegacyPayload = merchantsOnLegacyPayload(config.merchants);
  if (onLegacyPayload.length > 0 || config.callbacks.payloadVersion === 'legacy') {
    // Deprecated (docs/decisions/0040-callback-payload-shape.md): say who still gets it, at every start.
    logger.warn(
      { merchants: onLegacyPayload, defaultPayloadVersion: config.callbacks.payloadVersion },
      'merchant callbacks in the deprecated legacy payload: move these merchants to callbackPayloadVersion 2026-11-25',
    );
  }
}

/** What the workers run with (never a secret: how many sign, not what). */
function logWorkersRunning(
  config: WorkerConfig,
  logger: Logger,
  {
    cache,
    port,
    deployment,
  }: { cache: ReturnType<typeof resolveCacheSize>; port: number; deployment?: DeploymentVersion },
): void {
  logger.info(
    {
      taskQueue: config.temporal.taskQueue,
      bankReadsTaskQueue: bankReadsTaskQueue(config.temporal.taskQueue),
      bankMaxReadsPerSecond: config.bank.maxReadsPerSecond,
      ...config.worker,
      maxCachedWorkflows: cache.size,
      cacheSizedBy: cache.reason,
      memoryLimit: cache.limit ?? 'none',
      // The merchants this worker knows: their entries in MERCHANTS_FILE override the globals below.
      merchants: config.merchants.ids(),
      // What callbacks may reach by default, and how many secrets sign them (never the secrets).
      callbackAllowedOrigins: config.callbacks.allowList.origins,
      callbackLoopbackAllowed: config.callbacks.allowList.loopback,
      callbackSigningSecrets: config.callbacks.signingSecrets.length,
      callbackSigningMasters: config.callbacks.signingMasters.length,
      callbackPayloadVersion: config.callbacks.payloadVersion,
      workerMetricsPort: port,
      workerDeployment: deployment ? versionString(deployment) : 'unversioned',
      shutdownGraceMs: config.shutdown.workerGraceMs,
    },
    'workers running',
  );
}

/**
 * Composition root of a worker process: bank client, callback dispatcher (with the callback allow-list's DNS
 * guard), the callback allow-list and signing secrets, the process's one WebhookEvidence,
 * activities, the two workers with the configured sizing; then runs them.
 */
export async function startWorker(options: {
  config: WorkerConfig;
  logger: Logger;
  connection: NativeConnection;
  bank: BankEndpoints;
  /** The process's data converter (createDataConverter), the same as its clients'. */
  dataConverter: DataConverter;
  /** The prebuilt workflow bundle (prebuiltWorkflowBundle); absent: bundle the workflows at start (webpack). */
  workflowBundle?: WorkflowBundleOption;
  /**
   * The build id of that workflow code (prebuiltWorkflowBundle's buildId; WORKER_BUILD_ID wins): the workers join
   * the Worker Deployment config.temporal.deployment.name as that build. Undefined: unversioned workers.
   */
  buildId?: string;
  /** The process's tracing (processTracing()); undefined: off. */
  tracing?: Tracing;
  /** EntryContext.runtimeMetricsUrl: the Runtime's exporter, served on WORKER_METRICS_PORT with the worker's own metrics. */
  runtimeMetricsUrl?: string;
  /** EntryContext.stopSignal: /readyz answers 503 `draining` from SIGTERM on, before stop() is reached. */
  stopSignal?: AbortSignal;
}): Promise<RunningWorker> {
  const { config, logger } = options;
  const metrics = createWorkerMetrics();
  // Up before the workers: /healthz answers and /readyz says "starting" while the workflow bundle loads.
  const metricsServer = await startWorkerMetricsServer({
    port: config.workerMetricsPort,
    host: config.workerMetricsHost,
    registry: metrics.registry,
    runtimeMetricsUrl: options.runtimeMetricsUrl,
    logger: logger.child({ component: 'worker-metrics' }),
  });
  const bank = createWorkerBankClient(config, options.bank, logger, (outcome) =>
    metrics.tokenRequests.inc({ outcome }),
  );
  // One dispatcher per allow-list: the DNS rebinding guard lets loopback through only where that list allows it.
  const dispatchers = callbackDispatchers();
  warnAboutCallbackSigning(config, logger);
  // The merchants' secret generations, read from Temporal at each callback (src/client/merchant-secrets.ts).
  const temporal = new Client({
    connection: options.connection,
    namespace: config.temporal.namespace,
    dataConverter: options.dataConverter,
  });
  const activities = createActivities({
    bank: bank.client,
    webhooks: { publicBaseUrl: config.webhooks.publicBaseUrl, hashSecret: config.webhooks.hashSecret },
    callbacks: config.callbacks,
    merchants: config.merchants,
    callbackSecretGenerations: (merchantId) => readCallbackSecretGenerations(temporal, merchantId),
    callbackDispatcher: (merchant) => dispatchers.for(merchant),
    // One per process: a webhook seen by any activity of this worker slows every application's polls.
    webhookEvidence: new WebhookEvidence(),
    // Smooths this process's reads under the same ceiling Temporal applies to all workers together.
    readPacer: new ReadPacer(config.bank.maxReadsPerSecond),
    metrics,
    // A duplicate id is believed only when no other workflow records it as its own (another merchant's included).
    applications: applicationRecords(options.connection.workflowService, config.temporal.namespace),
    // Each merchant's undelivered callbacks (src/client/undelivered-callbacks.ts), on the main task queue.
    callbackLedger: callbackLedgerAccess(temporal, config.temporal.taskQueue),
  });
  const closeClients = async () => {
    await bank.close();
    await dispatchers.close();
    await metricsServer.close();
  };
  // The cache as configured, or from the memory the worker may use (src/worker/sizing.ts; createWorker does the same).
  const cache = resolveCacheSize(config.worker);
  const buildId = config.temporal.deployment.buildId ?? options.buildId;
  const deployment = buildId ? { deploymentName: config.temporal.deployment.name, buildId } : undefined;
  let workers: PaylaterWorkers;
  try {
    workers = await createWorker({
      connection: options.connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      activities,
      dataConverter: options.dataConverter,
      workflowBundle: options.workflowBundle,
      // Sized once, here (the log below says why); createWorker sizes a cache left unset itself.
      tuning: { ...config.worker, maxCachedWorkflows: cache.size },
      bankMaxReadsPerSecond: config.bank.maxReadsPerSecond,
      tracing: options.tracing,
      deployment,
      shutdownGraceMs: config.shutdown.workerGraceMs,
    });
  } catch (err) {
    await closeClients();
    throw err;
  }
  metricsServer.setWorkers(workers);
  if (options.stopSignal?.aborted) metricsServer.setDraining();
  else options.stopSignal?.addEventListener('abort', () => metricsServer.setDraining(), { once: true });
  const done = workers.run().finally(closeClients);
  logWorkersRunning(config, logger, { cache, port: metricsServer.port, deployment });
  return {
    workers,
    deployment,
    metricsServer,
    done,
    async stop() {
      // Stops polling at once; running activities get the grace time, then are cancelled and handed back.
      metricsServer.setDraining();
      workers.shutdown();
      await done;
    },
  };
}
