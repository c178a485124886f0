import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../shared/search-attributes';

/**
 * The embedded dev server's process: its arguments, and spawning it. Light on purpose (no Temporal client): `npm
 * start` spawns the server before it loads the SDK, so the server boots while the rest loads (src/main.ts); waiting
 * for it to answer is ./dev-server.ts.
 */
export interface DevServerProcessOptions {
  cliPath: string;
  port: number;
  uiPort: number;
  /** Folder of the SQLite file (created if missing), relative to `cwd`. */
  dataDir: string;
  cwd: string;
  namespace: string;
  /**
   * The codec endpoint the Web UI calls to decode payloads (`--ui-codec-endpoint`): its codec gateway on 127.0.0.1
   * (src/api/ui-codec-gateway.ts). Unset: the UI shows encrypted payloads as they are stored.
   */
  uiCodecEndpoint?: string;
}

/** A spawned dev server, not yet known to answer. */
export interface DevServerProcess {
  address: string;
  uiUrl: string;
  dbFile: string;
  port: number;
  uiPort: number;
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number | null>;
  /** The exit code once it ended early; undefined while it runs. */
  earlyExit(): number | null | undefined;
  /** The last 4,000 characters it printed. */
  output(): string;
  /** SIGTERM, SIGKILL after a grace period; resolves when it is gone. */
  stop(): Promise<void>;
}

/**
 * Dynamic config the product needs: update-with-start is a multi-operation, off by default on some
 * server versions; task-queue fairness (the new matcher, and fairness on it) gives each
 * merchant its share of the bank-reads queue (src/shared/task-queues.ts bankReadPriority); off, the fairness keys
 * are ignored and the queue is first come, first served.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = [
  'frontend.enableExecuteMultiOperation=true',
  'frontend.enableUpdateWorkflowExecution=true',
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
  'matching.useNewMatcher=true',
  'matching.enableFairness=true',
  // Worker Versioning: what deploy/temporal/dynamicconfig.yaml writes out (the defaults of Server 1.32).
  'system.enableDeploymentVersions=true',
  'system.enableSendTargetVersionChanged=true',
];

export function devServerArgs(
  options: Pick<DevServerProcessOptions, 'port' | 'uiPort' | 'namespace' | 'uiCodecEndpoint'> & { dbFile?: string },
): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
  ];
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (options.namespace !== 'default') args.push('--namespace', options.namespace);
  if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Keyword`);
  for (const name of DATETIME_SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Datetime`);
  for (const kv of DEV_SERVER_DYNAMIC_CONFIG) args.push('--dynamic-config-value', kv);
  args.push('--log-level', 'warn');
  return args;
}

/**
 * Spawns the Temporal CLI dev server with its state in a SQLite file. It is killed when this process exits without
 * calling stop(), so it is never left orphaned.
 */
export function spawnDevServer(options: DevServerProcessOptions): DevServerProcess {
  const dataDir = isAbsolute(options.dataDir) ? options.dataDir : join(options.cwd, options.dataDir);
  // Owner only, like the sandbox state beside it (src/sandbox/persistence.ts): development customer data.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const dbFile = join(dataDir, 'temporal.db');

  const child: ChildProcess = spawn(options.cliPath, devServerArgs({ ...options, dbFile }), {
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  // A CLI that cannot be executed emits 'error' (and 'exit' only sometimes): both end the wait.
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (err) => {
      collect(Buffer.from(String(err.message)));
      resolve(null);
    });
  });
  let earlyExit: number | null | undefined;
  void exited.then((code) => (earlyExit = code));
  // Last resort if the parent exits without calling stop(): never leave the server orphaned.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null || earlyExit !== undefined) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    address: `127.0.0.1:${options.port}`,
    uiUrl: `http://localhost:${options.uiPort}`,
    dbFile,
    port: options.port,
    uiPort: options.uiPort,
    exited,
    earlyExit: () => earlyExit,
    output: () => output,
    stop,
  };
}
