import { ManagedProcess } from './processes';

/**
 * The service's processes as separate children, started from the build (`dist/`) the way production runs them:
 * the bank sandbox, API processes and workers, each a ManagedProcess with its log file. The chaos and cluster runs
 * compose their stacks from these (and their own Temporal: the dev server, or the Postgres-backed cluster).
 */

/** PATH and HOME of this shell only (no other variable leaks in), NODE_ENV production. */
export function baseEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'production' };
}

/** Where a process runs from and writes its log. */
export interface ProcessPlace {
  /** The project root (its `dist/` is what runs). */
  root: string;
  /** The log file of a process by name. */
  log(name: string): string;
}

/** `node dist/sandbox/server.js` on 127.0.0.1:`port`, account webhooks to `accountWebhookUrl`, activated at once. */
export function sandboxProcess(
  place: ProcessPlace,
  options: {
    port: number;
    accountWebhookUrl: string;
    securityHeader: string;
    /** SANDBOX_CLIENT_ID / SANDBOX_CLIENT_SECRET; the sandbox's defaults when absent. */
    client?: { id: string; secret: string };
    logLevel?: string;
  },
): ManagedProcess {
  return new ManagedProcess(
    'sandbox',
    process.execPath,
    ['dist/sandbox/server.js'],
    {
      ...baseEnv(),
      SANDBOX_PORT: String(options.port),
      SANDBOX_HOST: '127.0.0.1',
      ...(options.client && { SANDBOX_CLIENT_ID: options.client.id, SANDBOX_CLIENT_SECRET: options.client.secret }),
      SANDBOX_ACCOUNT_WEBHOOK_URL: options.accountWebhookUrl,
      SANDBOX_WEBHOOK_SECURITY_HEADER: options.securityHeader,
      SANDBOX_ACTIVATION: 'immediate',
      ...(options.logLevel && { SANDBOX_LOG_LEVEL: options.logLevel }),
    },
    place.log('sandbox'),
    place.root,
  );
}

/** The secrets an API process and a worker share. */
export interface StackSecrets {
  hash: string;
  header: string;
  apiKey: string;
  signing: string;
  payloadKeys: string;
}

/** The variables API processes and workers share: Temporal, the bank (the sandbox), the secrets, one merchant. */
export function serviceEnv(options: {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  sandboxUrl: string;
  secrets: StackSecrets;
  merchant: string;
  /** OPERATOR_API_KEYS (required with a real bank; the runs decode nothing through /codec). */
  operatorKey: string;
  callbacks: { origin: string; transactionsUrl: string };
}) {
  return {
    ...baseEnv(),
    TEMPORAL_ADDRESS: options.temporalAddress,
    TEMPORAL_NAMESPACE: options.namespace,
    TASK_QUEUE: options.taskQueue,
    BANK_AUTH_URL: options.sandboxUrl,
    BANK_BASE_URL: options.sandboxUrl,
    BANK_CLIENT_ID: 'sandbox-client',
    BANK_CLIENT_SECRET: 'sandbox-secret',
    WEBHOOK_HASH_SECRET: options.secrets.hash,
    WEBHOOK_SECURITY_HEADER: options.secrets.header,
    MERCHANT_API_KEYS: `${options.merchant}:${options.secrets.apiKey}`,
    OPERATOR_API_KEYS: options.operatorKey,
    CALLBACK_ALLOWED_ORIGINS: options.callbacks.origin,
    CALLBACK_SIGNING_SECRETS: options.secrets.signing,
    PAYLOAD_ENCRYPTION_KEYS: options.secrets.payloadKeys,
    TRANSACTIONS_CALLBACK_URL: options.callbacks.transactionsUrl,
    LOG_LEVEL: 'info',
  };
}

/** `node dist/api/server.js` (npm run api) on its two ports, PUBLIC_BASE_URL its public listener. */
export function apiProcess(
  place: ProcessPlace,
  name: string,
  env: Record<string, string>,
  ports: { public: number; internal: number },
  publicUrl: string,
): ManagedProcess {
  return new ManagedProcess(
    name,
    process.execPath,
    ['dist/api/server.js'],
    { ...env, PORT: String(ports.public), INTERNAL_PORT: String(ports.internal), PUBLIC_BASE_URL: publicUrl },
    place.log(name),
    place.root,
  );
}

/** `node dist/worker.js` (npm run worker); `env` holds its PUBLIC_BASE_URL and WORKER_METRICS_PORT. */
export function workerProcess(place: ProcessPlace, name: string, env: Record<string, string>): ManagedProcess {
  return new ManagedProcess(name, process.execPath, ['dist/worker.js'], env, place.log(name), place.root);
}
