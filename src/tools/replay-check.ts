// First: .env (src/entry/load-env-file.ts), as for the worker whose configuration this check shares.
import '../entry/supported-node';
import '../entry/load-env-file';
import { existsSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { status as grpcStatus } from '@grpc/grpc-js';
import { isGrpcServiceError, type Client, type Connection, type WorkflowExecutionInfo } from '@temporalio/client';
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type DataConverter,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
import { Worker } from '@temporalio/worker';
import pino from 'pino';
import { StartupError } from '../entry/run-entry';
import { ConfigError, loadWorkerConfig } from '../config';
import { createLogger, installTemporalLogging } from '../telemetry/logging';
import {
  installedSdkVersion,
  loadWorkflowBundle,
  WORKFLOW_BUNDLE_FILE,
  type WorkflowBundleManifest,
} from '../worker/prebuilt-workflow-bundle';
import { openMerchantPayloadKeys, type MerchantPayloadKeys } from '../keys/payload-codec';
import { NO_TRACING_SINKS } from '../telemetry/tracing';
import { connectClient, TemporalNamespaceError, TemporalUnreachableError } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import { bridgeGate } from '../temporal/bridge-release';
import {
  buildIdOf,
  DEFAULT_WORKER_DEPLOYMENT_NAME,
  versionString,
  type DeploymentVersion,
} from '../temporal/worker-deployment';
import {
  checkBuildId,
  emptyCounts,
  isReplayed,
  listQueries,
  parseReplayCheckArgs,
  placementOf,
  REPLAY_CHECK_USAGE,
  RunSample,
  stayingVersion,
  UsageError,
  exitCodeOf,
  failureSummary,
  formatReport,
  type ListedRun,
  type ReplayFailure,
  type ReplayReport,
  type TypeCounts,
} from './replay-selection';

/**
 * `npm run replay-check`: the replay gate. Lists the workflows of the namespace on TASK_QUEUE (open, and closed within
 * a window), samples each workflow type, downloads those histories and replays them against a workflow bundle with
 * the workers' data converter. Runs pinned to another build are left out: that build keeps running them. See
 * docs/deploying.md "The replay gate".
 */

/** Runs read from one listing at most: a namespace's visibility rows are cheap, but not without end. */
export const LIST_LIMIT = 100_000;

const BEHAVIOR = defineSearchAttributeKey('TemporalWorkflowVersioningBehavior', SearchAttributeType.KEYWORD);
const VERSION = defineSearchAttributeKey('TemporalWorkerDeploymentVersion', SearchAttributeType.KEYWORD);

/** Listing or download refused by Temporal: the check could not look, so it says nothing (exit 2). */
export class ReplayCheckError extends Error {
  override name = 'ReplayCheckError';
}

export interface ReplayCheckTarget {
  /** Connected with `dataConverter` (the listing decodes memos with it). */
  client: Client;
  address: string;
  namespace: string;
  taskQueue: string;
  /** The workers' (createDataConverter over PAYLOAD_ENCRYPTION_KEYS): the replayer decodes every payload with it. */
  dataConverter: DataConverter;
}

export interface ReplayCheckSettings {
  /** A prebuilt workflow bundle (Worker.create's workflowBundle.codePath). */
  bundlePath: string;
  /** The build the bundle is: runs pinned to it are replayed, runs pinned to any other are not (unless `all`). */
  checked: DeploymentVersion;
  sinceMs: number;
  sample: number;
  all: boolean;
  concurrency: number;
  /** The window's end; now when absent. */
  now?: Date;
  listLimit?: number;
  /** The bridge's build id in this deployment (--bridge-build-id), when WORKER_BUILD_ID overrode it there. */
  bridgeBuildId?: string;
}

interface TypeTally {
  counts: TypeCounts;
  sample: RunSample;
  eligible: number;
}

/**
 * The gate itself, for a caller with its own connection (the cluster test): lists, samples, downloads with at most
 * `concurrency` histories in flight, replays one at a time, and reports. Throws ReplayCheckError when Temporal
 * refuses a listing or a download; a replay that fails is in the report, not thrown.
 */
export async function runReplayCheck(target: ReplayCheckTarget, settings: ReplayCheckSettings): Promise<ReplayReport> {
  const now = settings.now ?? new Date();
  const since = settings.sinceMs > 0 ? new Date(now.getTime() - settings.sinceMs) : undefined;
  const queries = listQueries(target.taskQueue, since);
  const limit = settings.listLimit ?? LIST_LIMIT;
  const tallies = new Map<string, TypeTally>();
  const staysOn = new Map<string, { runs: number; workflowTypes: Record<string, number> }>();
  let listingCapped = false;

  for (const query of [queries.open, queries.closed]) {
    if (!query) continue;
    let listed = 0;
    try {
      for await (const info of target.client.workflow.list({ query, pageSize: 1_000 })) {
        if (listed++ >= limit) {
          listingCapped = true;
          break;
        }
        let tally = tallies.get(info.type);
        if (!tally) {
          tally = { counts: emptyCounts(info.type), sample: new RunSample(settings.sample), eligible: 0 };
          tallies.set(info.type, tally);
        }
        tally.counts.listed++;
        const placement = placementOf(versioningAttributes(info), settings.checked);
        const stays = stayingVersion(placement);
        if (stays) {
          tally.counts.pinnedElsewhere++;
          const entry = staysOn.get(stays) ?? { runs: 0, workflowTypes: {} };
          entry.runs++;
          entry.workflowTypes[info.type] = (entry.workflowTypes[info.type] ?? 0) + 1;
          staysOn.set(stays, entry);
        }
        if (!isReplayed(placement, settings.all)) continue;
        tally.eligible++;
        tally.sample.offer(listedRun(info));
      }
    } catch (err) {
      throw new ReplayCheckError(`Listing the workflows failed (${query}): ${firstLine(err)}`);
    }
  }

  const selected: ListedRun[] = [];
  for (const tally of tallies.values()) {
    const runs = tally.sample.runs();
    tally.counts.notSampled = tally.eligible - runs.length;
    selected.push(...runs);
  }
  const failures = selected.length > 0 ? await replay(target, settings, selected, tallies) : [];
  const bridge = await bridgeGate(target.client, settings.checked.buildId, {
    taskQueue: target.taskQueue,
    deploymentName: settings.checked.deploymentName,
    bridgeBuildId: settings.bridgeBuildId,
  }).catch((err: unknown) => {
    throw new ReplayCheckError(`Counting the runs that need the bridge release failed: ${firstLine(err)}`);
  });

  const types = [...tallies.values()].map((t) => t.counts).sort((a, b) => (a.workflowType < b.workflowType ? -1 : 1));
  return {
    address: target.address,
    namespace: target.namespace,
    taskQueue: target.taskQueue,
    bundle: settings.bundlePath,
    build: versionString(settings.checked),
    closedSince: since?.toISOString() ?? null,
    sample: settings.sample,
    all: settings.all,
    types,
    staysOn: [...staysOn.entries()]
      .map(([version, entry]) => ({ version, ...entry }))
      .sort((a, b) => (a.version < b.version ? -1 : 1)),
    failures,
    listingCapped,
    bridge: { ...bridge.runs, ...(bridge.refusal === undefined ? {} : { refusal: bridge.refusal }) },
    ok: failures.length === 0 && bridge.refusal === undefined,
  };
}

function versioningAttributes(info: WorkflowExecutionInfo): { behavior?: string; deploymentVersion?: string } {
  return {
    behavior: info.typedSearchAttributes.get(BEHAVIOR),
    deploymentVersion: info.typedSearchAttributes.get(VERSION),
  };
}

function listedRun(info: WorkflowExecutionInfo): ListedRun {
  const open = info.status.name === 'RUNNING';
  return {
    workflowId: info.workflowId,
    runId: info.runId,
    workflowType: info.type,
    open,
    startTime: info.startTime.getTime(),
    closeTime: open ? undefined : info.closeTime?.getTime(),
  };
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0] ?? '';
}

/**
 * A pass-through codec placed before the real one, remembering the message of the last failure the replayer
 * encoded. The failure converter (src/shared/failure-converter.ts) moves a failure's message into an encoded payload
 * that the real codec encrypts, so a workflow-task failure in replay (a workflow type the bundle lacks, code throwing
 * on an older snapshot) reaches us as "Encoded failure"; this gives its real message. Replay runs one history at a
 * time, so the last one seen belongs to the run being replayed.
 */
export function failureMessageRecorder(): { codec: PayloadCodec; take(): string | undefined } {
  let last: string | undefined;
  return {
    codec: {
      encode(payloads: Payload[]): Promise<Payload[]> {
        for (const payload of payloads) {
          const message = failureAttributesMessage(payload);
          if (message !== undefined) last = message;
        }
        return Promise.resolve(payloads);
      },
      decode: (payloads: Payload[]) => Promise.resolve(payloads),
    },
    take() {
      const message = last;
      last = undefined;
      return message;
    },
  };
}

/** The message of a failure's encoded attributes (`{ message, stack_trace }` as JSON), or undefined. */
function failureAttributesMessage(payload: Payload): string | undefined {
  const encoding = payload.metadata?.encoding;
  if (!encoding || !payload.data || Buffer.from(encoding).toString('utf8') !== 'json/plain') return undefined;
  try {
    const value = JSON.parse(Buffer.from(payload.data).toString('utf8')) as unknown;
    if (typeof value !== 'object' || value === null) return undefined;
    const keys = Object.keys(value).sort();
    const { message } = value as { message?: unknown };
    return keys.length === 2 && keys[0] === 'message' && keys[1] === 'stack_trace' && typeof message === 'string'
      ? message
      : undefined;
  } catch {
    return undefined;
  }
}

type Download = { run: ListedRun } & ({ history: History } | { gone: true } | { error: unknown });

/** The histories in order, with up to `concurrency` downloads ahead of the one being replayed. */
async function* downloads(client: Client, runs: ListedRun[], concurrency: number): AsyncGenerator<Download> {
  const fetchOne = (run: ListedRun): Promise<Download> =>
    client.workflow
      .getHandle(run.workflowId, run.runId)
      .fetchHistory()
      .then(
        (history) => ({ run, history }),
        (error: unknown) =>
          isGrpcServiceError(error) && error.code === grpcStatus.NOT_FOUND ? { run, gone: true } : { run, error },
      );
  // Settled promises only (errors are values): one left behind when replay stops early is never unhandled.
  const ahead: Promise<Download>[] = [];
  let next = 0;
  while (next < runs.length || ahead.length > 0) {
    while (next < runs.length && ahead.length < concurrency) ahead.push(fetchOne(runs[next++]!));
    yield await ahead.shift()!;
  }
}

async function replay(
  target: ReplayCheckTarget,
  settings: ReplayCheckSettings,
  runs: ListedRun[],
  tallies: Map<string, TypeTally>,
): Promise<ReplayFailure[]> {
  const failures: ReplayFailure[] = [];
  const recorder = failureMessageRecorder();
  // runReplayHistories takes the next history only after the previous one's result: one run in flight.
  const pushed: ListedRun[] = [];
  async function* histories() {
    for await (const download of downloads(target.client, runs, settings.concurrency)) {
      const counts = tallies.get(download.run.workflowType)!.counts;
      if ('gone' in download) {
        counts.gone++;
        continue;
      }
      if ('error' in download) {
        throw new ReplayCheckError(
          `Downloading the history of ${download.run.workflowId} (run ${download.run.runId}) failed: ${firstLine(download.error)}`,
        );
      }
      pushed.push(download.run);
      recorder.take();
      yield { workflowId: download.run.workflowId, history: download.history };
    }
  }
  const results = Worker.runReplayHistories(
    {
      workflowBundle: { codePath: settings.bundlePath },
      dataConverter: {
        ...target.dataConverter,
        payloadCodecs: [recorder.codec, ...(target.dataConverter.payloadCodecs ?? [])],
      },
      // The tracing bundle's interceptors need their sink; the plain bundle ignores it (src/telemetry/tracing.ts).
      sinks: NO_TRACING_SINKS,
    },
    histories(),
  );
  for await (const result of results) {
    const run = pushed.shift()!;
    const counts = tallies.get(run.workflowType)!.counts;
    counts.replayed++;
    if (!result.error) {
      counts.passed++;
      continue;
    }
    counts.failed++;
    failures.push({
      workflowId: run.workflowId,
      runId: run.runId,
      workflowType: run.workflowType,
      error: { name: result.error.name, message: failureSummary(result.error.message, recorder.take()) },
    });
  }
  return failures;
}

/** The distDir of this build (dist/, beside dist/tools/). */
const DIST_DIR = join(__dirname, '..');

/**
 * The bundle to check and the build it is. This build's bundle is checked as a worker checks it at start (stale or
 * altered: refused); another (`--bundle`, a candidate build's) against the manifest beside it, which gives its id.
 */
export function checkedBuild(
  args: { bundle?: string; buildId?: string },
  env: Record<string, string | undefined>,
  distDir = DIST_DIR,
): { bundlePath: string; checked: DeploymentVersion } {
  const deploymentName = env.WORKER_DEPLOYMENT_NAME?.trim() || DEFAULT_WORKER_DEPLOYMENT_NAME;
  const configured = args.buildId ?? (env.WORKER_BUILD_ID?.trim() || undefined);
  const buildId =
    configured === undefined ? undefined : checkBuildId(configured, args.buildId ? '--build-id' : 'WORKER_BUILD_ID');
  const own = join(distDir, WORKFLOW_BUNDLE_FILE);
  const bundlePath = args.bundle ? resolve(args.bundle) : own;
  let manifest: WorkflowBundleManifest | undefined;
  if (bundlePath === own) manifest = loadWorkflowBundle(distDir).manifest;
  else {
    if (!existsSync(bundlePath)) throw new UsageError(`--bundle ${args.bundle}: no such file`);
    const manifestPath = bundlePath.replace(/\.js$/, '') + '.json';
    if (existsSync(manifestPath)) manifest = checkedManifest(bundlePath, manifestPath);
    else if (buildId === undefined)
      throw new UsageError(
        `--bundle ${args.bundle}: no manifest beside it (${relative(process.cwd(), manifestPath)}) to take its build id from: pass --build-id`,
      );
  }
  return { bundlePath, checked: { deploymentName, buildId: buildId ?? buildIdOf(manifest!.inputsSha256) } };
}

function checkedManifest(bundlePath: string, manifestPath: string): WorkflowBundleManifest {
  let manifest: WorkflowBundleManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as WorkflowBundleManifest;
  } catch (err) {
    throw new StartupError(`Unreadable workflow bundle manifest ${manifestPath}: ${firstLine(err)}`);
  }
  if (manifest.sdkVersion !== installedSdkVersion())
    throw new StartupError(
      `The workflow bundle ${bundlePath} was built with @temporalio/worker ${manifest.sdkVersion}, but ` +
        `${installedSdkVersion()} is installed: check it with the build it belongs to`,
    );
  const sha = createHash('sha256').update(readFileSync(bundlePath)).digest('hex');
  if (manifest.bundleSha256 !== sha)
    throw new StartupError(`The workflow bundle ${bundlePath} does not match its manifest ${manifestPath}`);
  return manifest;
}

/** The command: its exit status (0 passed, 1 a replay failed, 2 usage, configuration or connection error). */
export async function main(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  io: { out: (text: string) => void; err: (text: string) => void },
): Promise<number> {
  const fail = (message: string) => {
    io.err(`replay-check: ${message}\n`);
    return 2;
  };
  let args;
  try {
    args = parseReplayCheckArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) return fail(`${err.message}\n${REPLAY_CHECK_USAGE}`);
    throw err;
  }
  if (args.help) {
    io.out(REPLAY_CHECK_USAGE);
    return 0;
  }
  let connection: Connection | undefined;
  let payloadKeys: MerchantPayloadKeys | undefined;
  try {
    const config = loadWorkerConfig(env);
    const { bundlePath, checked } = checkedBuild(args, env);
    const embedded = !config.temporal.address;
    // No address configured: the embedded dev server of `npm start` (src/main.ts binds it to 127.0.0.1).
    const address = config.temporal.address ?? `127.0.0.1:${config.temporal.devServer.port}`;
    if (!embedded && config.payloadEncryption.developmentKey)
      io.err(
        'replay-check: warning: PAYLOAD_ENCRYPTION_KEYS is unset, so payloads are decoded with the development key; ' +
          "set the workers' keys, or every encrypted history fails to replay\n",
      );
    // The workers' codec: master keys and the merchants' keys (MERCHANT_KEY_STORE), so every history decodes but an
    // erased merchant's.
    payloadKeys = await openMerchantPayloadKeys(config).catch((err: Error) => {
      throw new StartupError(err.message);
    });
    const dataConverter = createDataConverter(payloadKeys.codec);
    const target = { address, namespace: config.temporal.namespace, env: config.env };
    let client: Client;
    try {
      ({ client, connection } = await connectClient(target, { dataConverter }));
    } catch (err) {
      if (embedded && err instanceof TemporalUnreachableError)
        return fail(
          `nothing answers at ${address}, the embedded dev server's address: start the stack with \`npm start\`, ` +
            'or set TEMPORAL_ADDRESS (or TEMPORAL_PROFILE) as for the worker to check a cluster',
        );
      throw err;
    }
    // The replay worker's runtime logs go to stderr: stdout is the report. A failed replay is logged by the SDK
    // too, and the report says it better: only LOG_LEVEL asks for the log.
    const level = env.LOG_LEVEL?.trim() ? config.logLevel : 'fatal';
    installTemporalLogging(createLogger({ level, name: 'replay-check', destination: pino.destination(2) }));
    const report = await runReplayCheck(
      { client, address, namespace: config.temporal.namespace, taskQueue: config.temporal.taskQueue, dataConverter },
      {
        bundlePath,
        checked,
        sinceMs: args.sinceMs,
        sample: args.sample,
        all: args.all,
        concurrency: args.concurrency,
        bridgeBuildId: args.bridgeBuildId,
      },
    );
    io.out(args.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return exitCodeOf(report);
  } catch (err) {
    const e = err as Error;
    if (e instanceof UsageError) return fail(`${e.message}\n${REPLAY_CHECK_USAGE}`);
    if (
      e instanceof ConfigError ||
      e instanceof StartupError ||
      e instanceof TemporalUnreachableError ||
      e instanceof TemporalNamespaceError ||
      e instanceof ReplayCheckError
    )
      return fail(e.message);
    // Anything else (a bundle the replayer cannot load, for one): its message, no stack.
    return fail(`${e?.name ?? 'Error'}: ${e?.message ?? String(err)}`);
  } finally {
    await connection?.close().catch(() => undefined);
    await payloadKeys?.close().catch(() => undefined);
  }
}

if (require.main === module) {
  // process.exit: the Temporal Runtime, once installed, keeps the process alive (and catches SIGTERM).
  // Writes to stdout and stderr are synchronous for files and pipes on Linux, so nothing written is lost.
  main(process.argv.slice(2), process.env, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  }).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`replay-check: ${(err as Error)?.message ?? String(err)}\n`);
      process.exit(2);
    },
  );
}
