import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { runEntry, StartupError } from './bootstrap';
import type { Config } from './config';
import { createActivities, createBankClient, createCallbackDispatcher, type Activities } from './activities';
import type { Logger } from './logging';
import { connectWorker } from './temporal/connection';

/** How long a stopping worker lets running activities finish before they are cancelled. */
export const SHUTDOWN_GRACE_TIME = '10s';

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: Activities;
  /** A prebuilt bundle (bundleWorkflowCode) instead of bundling src/workflows at start. */
  workflowBundle?: WorkflowBundleOption;
}

/** The worker: every workflow in src/workflows, the given activities, a set shutdown grace time. */
export function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.workflowBundle
      ? { workflowBundle: deps.workflowBundle }
      : { workflowsPath: require.resolve('./workflows') }),
    activities: deps.activities,
    shutdownGraceTime: SHUTDOWN_GRACE_TIME,
  });
}

export interface BankEndpoints {
  authUrl: string;
  baseUrl: string;
}

export interface RunningWorker {
  worker: Worker;
  /** Settles when the worker has stopped (after shutdown(), or on a fatal error). */
  done: Promise<void>;
  /** Drains the worker, then closes the bank client's pools. */
  stop(): Promise<void>;
}

/** Composition root of a worker process: bank client, callback dispatcher, activities, worker; then runs it. */
export async function startWorker(options: {
  config: Config;
  logger: Logger;
  connection: NativeConnection;
  bank: BankEndpoints;
}): Promise<RunningWorker> {
  const { config, logger } = options;
  const bank = createBankClient({
    authUrl: options.bank.authUrl,
    baseUrl: options.bank.baseUrl,
    clientId: config.bank.clientId,
    clientSecret: config.bank.clientSecret,
    logger: logger.child({ component: 'bank-client' }),
  });
  const callbackDispatcher = createCallbackDispatcher();
  const activities = createActivities({
    bank: bank.client,
    webhooks: { publicBaseUrl: config.webhooks.publicBaseUrl, hashSecret: config.webhooks.hashSecret },
    callbackDispatcher,
  });
  const worker = await createWorker({
    connection: options.connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    activities,
  });
  const done = worker.run().finally(async () => {
    await bank.close();
    await callbackDispatcher.close();
  });
  return {
    worker,
    done,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

/** `npm run worker`: a worker process alone, for production (stateless; scale out). */
if (require.main === module) {
  runEntry('worker', async ({ config, logger, onShutdown, shutdown }) => {
    if (!config.temporal.address) {
      throw new StartupError(
        'TEMPORAL_ADDRESS is required for `npm run worker` (use `npm start` for the embedded stack)',
      );
    }
    if (!config.bank.authUrl || !config.bank.baseUrl) {
      throw new StartupError('BANK_BASE_URL and BANK_AUTH_URL are required for `npm run worker`');
    }
    const connection = await connectWorker({
      address: config.temporal.address,
      namespace: config.temporal.namespace,
      env: config.env,
    });
    onShutdown(() => connection.close());
    const running = await startWorker({
      config,
      logger,
      connection,
      bank: { authUrl: config.bank.authUrl, baseUrl: config.bank.baseUrl },
    });
    onShutdown(() => running.stop());
    running.done.catch(async (err: unknown) => {
      logger.fatal({ err }, 'worker failed');
      await shutdown(1);
    });
    logger.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
  });
}
