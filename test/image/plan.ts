/**
 * The pure part of `npm run test:image` (test/image/run.ts): its options, the host ports it takes, the three
 * containers it runs from the one image, and how it judges what podman reports. No I/O here (test/image/plan.test.ts).
 */

/** The host ports the run may take (the containers' own ports are the image's defaults, mapped to these). */
export const HOST_PORT_RANGE = { low: 18000, high: 18999 } as const;

export interface ImageTestOptions {
  /** Build the Dockerfile first (default); `--no-build` or PAYLATER_IMAGE_NO_BUILD=1 reuse the tagged image. */
  build: boolean;
  /** localhost/paylater:<tag>: PAYLATER_IMAGE_TAG, default `image-test` (never compose's `local`). */
  tag: string;
  /** Leave the containers and the dev server running at the end, for a look (`--keep`); Ctrl-C removes them. */
  keep: boolean;
}

export const DEFAULT_TAG = 'image-test';

export function parseOptions(argv: string[], env: Record<string, string | undefined>): ImageTestOptions {
  const unknown = argv.filter((a) => !['--no-build', '--build', '--keep'].includes(a));
  if (unknown.length > 0) throw new Error(`unknown argument ${unknown.join(' ')} (--no-build, --keep)`);
  const noBuild = argv.includes('--no-build') || (!argv.includes('--build') && env.PAYLATER_IMAGE_NO_BUILD === '1');
  const tag = env.PAYLATER_IMAGE_TAG || DEFAULT_TAG;
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(tag)) throw new Error(`PAYLATER_IMAGE_TAG=${tag}: not an image tag`);
  return { build: !noBuild, tag, keep: argv.includes('--keep') };
}

/**
 * `count` distinct ports of the range that `isFree` accepts, scanning upward from `start` and wrapping around.
 * Throws when the range has fewer.
 */
export async function pickPorts(
  count: number,
  isFree: (port: number) => Promise<boolean>,
  start: number = HOST_PORT_RANGE.low,
): Promise<number[]> {
  const { low, high } = HOST_PORT_RANGE;
  const size = high - low + 1;
  const ports: number[] = [];
  for (let i = 0; i < size && ports.length < count; i++) {
    const port = low + ((start - low + i + size) % size);
    if (await isFree(port)) ports.push(port);
  }
  if (ports.length < count) throw new Error(`only ${ports.length} free ports in ${low}-${high}, ${count} needed`);
  return ports;
}

export type ProcessName = 'sandbox' | 'api' | 'worker';

/** One container of the run: the image's process, its ports (container → host) and what is probed. */
export interface ContainerSpec {
  process: ProcessName;
  command: string[];
  /** containerPort → hostPort, published on the host's 127.0.0.1. */
  ports: Record<number, number>;
  env: Record<string, string>;
  /** Container-side URLs (port, path) that must answer 2xx; the first is the one start-up waits for. */
  health: { port: number; path: string }[];
  /** `podman stop -t`: docker-compose.yml's stop_grace_period (the sandbox has none there: podman's 10 s). */
  graceSeconds: number;
}

export interface Secrets {
  webhookHash: string;
  securityHeader: string;
  bankClientSecret: string;
  payloadKeys: string;
  merchantKey: string;
  operatorKey: string;
}

export interface HostPorts {
  temporal: number;
  sandbox: number;
  apiPublic: number;
  apiInternal: number;
  worker: number;
}

export const MERCHANT = 'shop';

/**
 * The three containers. Each has a network namespace of its own (slirp4netns with allow_host_loopback): its
 * listeners keep the image's default ports, published on the host's 127.0.0.1, and it reaches the host's loopback
 * (the dev server, and the other two containers through their publications) at `hostFromContainer` (10.0.2.2).
 * The variables are docker-compose.yml's (x-app-env, bank-sandbox), with generated secrets.
 */
export function containerSpecs(ports: HostPorts, secrets: Secrets, hostFromContainer: string): ContainerSpec[] {
  const sandboxUrl = `http://${hostFromContainer}:${ports.sandbox}`;
  const publicUrl = `http://${hostFromContainer}:${ports.apiPublic}`;
  const appEnv = {
    LOG_LEVEL: 'info',
    TEMPORAL_ADDRESS: `${hostFromContainer}:${ports.temporal}`,
    TEMPORAL_NAMESPACE: 'default',
    TASK_QUEUE: 'paylater',
    BANK_AUTH_URL: sandboxUrl,
    BANK_BASE_URL: sandboxUrl,
    BANK_CLIENT_ID: 'sandbox-client',
    BANK_CLIENT_SECRET: secrets.bankClientSecret,
    PUBLIC_BASE_URL: publicUrl,
    WEBHOOK_HASH_SECRET: secrets.webhookHash,
    WEBHOOK_SECURITY_HEADER: secrets.securityHeader,
    PAYLOAD_ENCRYPTION_KEYS: secrets.payloadKeys,
    PORT: '3000',
    INTERNAL_PORT: '3001',
  };
  return [
    {
      process: 'sandbox',
      command: ['node', 'dist/sandbox/server.js'],
      ports: { 4010: ports.sandbox },
      env: {
        SANDBOX_HOST: '0.0.0.0',
        SANDBOX_PORT: '4010',
        SANDBOX_CLIENT_ID: 'sandbox-client',
        SANDBOX_CLIENT_SECRET: secrets.bankClientSecret,
        SANDBOX_ACCOUNT_WEBHOOK_URL: `${publicUrl}/webhooks/accounts`,
        SANDBOX_WEBHOOK_SECURITY_HEADER: secrets.securityHeader,
        SANDBOX_ACTIVATION: 'immediate',
        // One status every 2 s instead of 10 s: the end-to-end check sees a change sooner.
        SANDBOX_STEP_MS: '2000',
      },
      health: [{ port: 4010, path: '/_sandbox' }],
      graceSeconds: 10,
    },
    {
      process: 'api',
      command: ['node', 'dist/api/server.js'],
      ports: { 3000: ports.apiPublic, 3001: ports.apiInternal },
      env: {
        ...appEnv,
        MERCHANT_API_KEYS: `${MERCHANT}:${secrets.merchantKey}`,
        OPERATOR_API_KEYS: `ops:${secrets.operatorKey}`,
      },
      health: [
        { port: 3001, path: '/readyz' },
        { port: 3001, path: '/healthz' },
        { port: 3000, path: '/healthz' },
      ],
      graceSeconds: 20,
    },
    {
      process: 'worker',
      command: ['node', 'dist/worker.js'],
      ports: { 9464: ports.worker },
      env: { ...appEnv, WORKER_DEPLOYMENT_NAME: 'paylater', WORKER_METRICS_PORT: '9464' },
      health: [
        { port: 9464, path: '/readyz' },
        { port: 9464, path: '/healthz' },
      ],
      graceSeconds: 15,
    },
  ];
}

/** An env file for `podman run --env-file` (values on one line each: none of ours has a newline). */
export function envFile(env: Record<string, string>): string {
  for (const [name, value] of Object.entries(env))
    if (/[\r\n]/.test(value)) throw new Error(`${name}: a value with a line break cannot go in an env file`);
  return Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join('\n')
    .concat('\n');
}

/** The image's HEALTHCHECK as `podman image inspect` reports it (Config.Healthcheck; times in nanoseconds). */
export interface HealthcheckConfig {
  Test?: string[];
  Interval?: number;
  Timeout?: number;
  StartPeriod?: number;
  Retries?: number;
}

/** What is wrong with the image's healthcheck, or undefined (it must run scripts/healthcheck.cjs with node). */
export function healthcheckProblem(config: HealthcheckConfig | null | undefined): string | undefined {
  if (!config?.Test?.length) return 'the image has no HEALTHCHECK (built in OCI format? build with --format docker)';
  const [kind, ...command] = config.Test;
  if (kind !== 'CMD') return `HEALTHCHECK is ${kind}, not an exec-form CMD: ${command.join(' ')}`;
  if (command[0] !== 'node' || command[1] !== 'scripts/healthcheck.cjs')
    return `HEALTHCHECK runs ${command.join(' ')}, not node scripts/healthcheck.cjs`;
  return undefined;
}

/** How a container ended after `podman stop -t <grace>`. */
export interface StopOutcome {
  exitCode: number;
  /** From the stop request until podman returned. */
  ms: number;
  graceSeconds: number;
}

/**
 * What is wrong with a stop, or undefined: it must exit 0 on its own within the grace period. 137 (128 + 9) is
 * podman's SIGKILL after the grace period; 143 (128 + 15) a process that let SIGTERM kill it without handling it.
 */
export function stopProblem(stop: StopOutcome): string | undefined {
  if (stop.exitCode === 137) return `killed (exit 137, SIGKILL) after ${stop.graceSeconds} s: SIGTERM did not stop it`;
  if (stop.exitCode === 143) return 'exit 143: SIGTERM ended it unhandled (no graceful shutdown)';
  if (stop.exitCode !== 0) return `exit code ${stop.exitCode}, not 0`;
  if (stop.ms > stop.graceSeconds * 1000) return `took ${stop.ms} ms, more than its ${stop.graceSeconds} s grace`;
  return undefined;
}

/** A byte count as MB (10^6, as podman prints it). */
export const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`;

/** A duration in seconds with one decimal. */
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * A process's log lines (pino JSON, `time` in ms) from `since` on, as "+<ms> <msg>" joined by " → ": what its shutdown
 * did, and when, after the stop request. At most `max` lines (the last ones); lines that are not JSON are skipped.
 */
export function shutdownTimeline(log: string, since: number, max = 8): string {
  const lines = log
    .split('\n')
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line) as { time?: number; msg?: string };
        return typeof entry.time === 'number' && entry.time >= since && entry.msg ? [entry] : [];
      } catch {
        return [];
      }
    })
    .slice(-max);
  if (lines.length === 0) return '(nothing logged)';
  // Repeats in a row (the SDK's "Worker state changed" for each state of each worker) as one, with a count.
  const runs: { text: string; count: number }[] = [];
  for (const e of lines) {
    const last = runs.at(-1);
    if (last && last.text.endsWith(` ms ${e.msg}`)) last.count += 1;
    else runs.push({ text: `+${e.time! - since} ms ${e.msg}`, count: 1 });
  }
  return runs.map((r) => (r.count > 1 ? `${r.text} (×${r.count})` : r.text)).join(' → ');
}
