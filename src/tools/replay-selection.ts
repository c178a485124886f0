import { formatDuration, parseDurationMs } from '../shared/application-settings';
import { versionString, type DeploymentVersion } from '../temporal/worker-deployment';

/**
 * The replay gate's decisions as plain functions (src/tools/replay-check.ts does the I/O): its arguments, which
 * runs the checked build would execute, which of them are sampled, and the report.
 */

export const REPLAY_CHECK_DEFAULTS = {
  sinceMs: 24 * 3_600_000,
  sample: 50,
  concurrency: 4,
} as const;

/** Bounds of the numeric options: a sample or a window beyond these is a typo, not a plan. */
const LIMITS = {
  sample: { min: 1, max: 10_000 },
  concurrency: { min: 1, max: 32 },
  sinceMs: { min: 0, max: 365 * 86_400_000 },
} as const;

export interface ReplayCheckArgs {
  /** Closed runs: those closed within this window before now; 0: open runs only. */
  sinceMs: number;
  /** At most this many runs replayed per workflow type. */
  sample: number;
  /** The workflow bundle to check; undefined: this build's dist/workflow-bundle.js. */
  bundle?: string;
  /** The checked build's id; undefined: WORKER_BUILD_ID, else the bundle manifest's (buildIdOf). */
  buildId?: string;
  /** The bridge release's build id in this deployment; undefined: BRIDGE_RELEASE.buildId. */
  bridgeBuildId?: string;
  /** Replay runs pinned to other builds too. */
  all: boolean;
  /** History downloads in flight. */
  concurrency: number;
  json: boolean;
  help: boolean;
}

/** A mistake in the command line: printed with the usage hint, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export const REPLAY_CHECK_USAGE = `usage: npm run replay-check -- [options]

Replays the histories of the workflows on TASK_QUEUE (open ones, and those closed within --since) against a
workflow bundle, with the worker's configuration (TEMPORAL_ADDRESS or TEMPORAL_PROFILE, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY / TEMPORAL_TLS_*, PAYLOAD_ENCRYPTION_KEYS, .env); with none, against the embedded stack of
\`npm start\` (127.0.0.1:TEMPORAL_DEV_SERVER_PORT, the development payload key).

Runs pinned to another build of WORKER_DEPLOYMENT_NAME stay on it and are not replayed (listed as "stays on").

options:
  --since <duration>    closed runs: those closed within this window (default ${formatDuration(REPLAY_CHECK_DEFAULTS.sinceMs)}; 0: open runs only)
  --sample <n>          at most n runs per workflow type (default ${REPLAY_CHECK_DEFAULTS.sample}): the oldest open ones, then the newest closed
  --bundle <path>       the workflow bundle to check (default: this build's dist/workflow-bundle.js)
  --build-id <id>       the checked build's id (default: WORKER_BUILD_ID, else from the bundle's manifest)
  --bridge-build-id <id> the bridge release's build id in this deployment, if WORKER_BUILD_ID overrode it there
  --all                 replay runs pinned to other builds too
  --concurrency <n>     history downloads in flight (default ${REPLAY_CHECK_DEFAULTS.concurrency})
  --json                print the report as one JSON object
  --help                this text

A build after the bridge release (0.9.0) is refused (exit 1) while any open run is unversioned or pinned to the bridge.

exit status: 0 every replayed run passed; 1 a replay failed; 2 a usage, configuration or connection error.
`;

function intOption(name: string, value: string, bounds: { min: number; max: number }): number {
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < bounds.min || n > bounds.max)
    throw new UsageError(`${name} must be a whole number from ${bounds.min} to ${bounds.max} (got "${value}")`);
  return n;
}

/** The command line (after the script name): `--name value` or `--name=value`. */
export function parseReplayCheckArgs(argv: readonly string[]): ReplayCheckArgs {
  const args: ReplayCheckArgs = {
    sinceMs: REPLAY_CHECK_DEFAULTS.sinceMs,
    sample: REPLAY_CHECK_DEFAULTS.sample,
    all: false,
    concurrency: REPLAY_CHECK_DEFAULTS.concurrency,
    json: false,
    help: false,
  };
  const flags = new Set(['--all', '--json', '--help', '-h']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (flags.has(name)) {
      if (eq > 0) throw new UsageError(`${name} takes no value`);
      if (name === '--all') args.all = true;
      else if (name === '--json') args.json = true;
      else args.help = true;
      continue;
    }
    if (!['--since', '--sample', '--bundle', '--build-id', '--bridge-build-id', '--concurrency'].includes(name))
      throw new UsageError(`unknown argument "${arg}"`);
    let value: string | undefined;
    if (eq > 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`${name} needs a value`);
      i++;
    }
    switch (name) {
      case '--since': {
        const ms = parseDurationMs(value);
        if (ms === undefined || ms < LIMITS.sinceMs.min || ms > LIMITS.sinceMs.max)
          throw new UsageError(`--since must be a duration such as 30m, 24h or 7d, at most 365d (got "${value}")`);
        args.sinceMs = ms;
        break;
      }
      case '--sample':
        args.sample = intOption('--sample', value, LIMITS.sample);
        break;
      case '--concurrency':
        args.concurrency = intOption('--concurrency', value, LIMITS.concurrency);
        break;
      case '--bundle':
        if (value.trim() === '') throw new UsageError('--bundle needs a path');
        args.bundle = value;
        break;
      case '--build-id':
        args.buildId = checkBuildId(value, '--build-id');
        break;
      case '--bridge-build-id':
        args.bridgeBuildId = checkBuildId(value, '--bridge-build-id');
        break;
    }
  }
  return args;
}

/** A build id as Temporal takes it: 1 to 255 characters, no whitespace. */
export function checkBuildId(value: string, source: string): string {
  if (!/^\S{1,255}$/.test(value)) throw new UsageError(`${source} must be 1 to 255 characters without spaces`);
  return value;
}

/** The task queue inside a visibility query: quotes would end the string literal, so they are refused. */
export function taskQueueLiteral(taskQueue: string): string {
  if (/['"\\]/.test(taskQueue)) throw new UsageError(`TASK_QUEUE "${taskQueue}" contains a quote or a backslash`);
  return `'${taskQueue}'`;
}

/** The two listings: open runs, and runs closed since `since` (none when the window is 0). */
export function listQueries(taskQueue: string, since: Date | undefined): { open: string; closed?: string } {
  const tq = `TaskQueue = ${taskQueueLiteral(taskQueue)}`;
  return {
    open: `${tq} AND ExecutionStatus = 'Running'`,
    closed: since ? `${tq} AND ExecutionStatus != 'Running' AND CloseTime >= '${since.toISOString()}'` : undefined,
  };
}

/**
 * Where a run executes, from the server's own search attributes (TemporalWorkflowVersioningBehavior: `Pinned` or
 * `AutoUpgrade`, the effective behaviour, a versioning override included; TemporalWorkerDeploymentVersion:
 * `deploymentName:buildId`):
 * - unversioned: it started before Worker Versioning (or has not yet run a task on a versioned worker) and moves to
 *   whatever version becomes current;
 * - auto-upgrade: it moves to the current version;
 * - pinned: it stays on its version, here when that is the checked one.
 */
export type Placement =
  { kind: 'unversioned' } | { kind: 'auto-upgrade' } | { kind: 'pinned'; version: DeploymentVersion; here: boolean };

export interface VersioningAttributes {
  behavior?: string;
  deploymentVersion?: string;
}

/** `name:buildId` (the search attribute's form) as a version; undefined when it is not one. */
export function parseDeploymentVersion(text: string | undefined): DeploymentVersion | undefined {
  const colon = text?.indexOf(':') ?? -1;
  if (!text || colon <= 0 || colon === text.length - 1) return undefined;
  return { deploymentName: text.slice(0, colon), buildId: text.slice(colon + 1) };
}

export function placementOf(attributes: VersioningAttributes, checked: DeploymentVersion): Placement {
  if (attributes.behavior === 'AutoUpgrade') return { kind: 'auto-upgrade' };
  const version = parseDeploymentVersion(attributes.deploymentVersion);
  // Pinned without a readable version: nothing says it stays elsewhere, so it is checked (a gate errs on replaying).
  if (attributes.behavior !== 'Pinned' || !version) return { kind: 'unversioned' };
  const here = version.deploymentName === checked.deploymentName && version.buildId === checked.buildId;
  return { kind: 'pinned', version, here };
}

/** The checked build would execute this run (or `--all`): replay it. */
export function isReplayed(placement: Placement, all: boolean): boolean {
  return all || placement.kind !== 'pinned' || placement.here;
}

/** One run as listed: enough to choose and fetch it, never its payloads. */
export interface ListedRun {
  workflowId: string;
  runId: string;
  workflowType: string;
  open: boolean;
  startTime: number;
  /** Closed runs only. */
  closeTime?: number;
}

/** The sample's order: open runs first, oldest start first (the longest-lived histories), then the newest closed. */
export function samplePriority(a: ListedRun, b: ListedRun): number {
  if (a.open !== b.open) return a.open ? -1 : 1;
  const byTime = a.open ? a.startTime - b.startTime : (b.closeTime ?? 0) - (a.closeTime ?? 0);
  if (byTime !== 0) return byTime;
  return a.workflowId < b.workflowId ? -1 : a.workflowId > b.workflowId ? 1 : a.runId < b.runId ? -1 : 1;
}

/** The first `size` runs offered, by samplePriority, holding at most 2×size at any time however many are offered. */
export class RunSample {
  private held: ListedRun[] = [];
  constructor(readonly size: number) {}

  offer(run: ListedRun): void {
    this.held.push(run);
    if (this.held.length >= 2 * this.size) this.compact();
  }

  runs(): ListedRun[] {
    this.compact();
    return [...this.held];
  }

  private compact(): void {
    this.held.sort(samplePriority);
    this.held.length = Math.min(this.held.length, this.size);
  }
}

/**
 * A replay error's message for a person, on one line. The SDK wraps core's failure in "Replay failed ... Details:
 * Workflow activation completion failed: Failure { failure: Some(Failure { message: "<the cause>", ... }) }": the
 * cause is the part worth reading. "Encoded failure" (the failure converter moved the real message into an encrypted
 * payload) is replaced by `recorded`, the message the replayer encoded, when there is one.
 */
export function failureSummary(message: string, recorded?: string): string {
  const inner = /\bmessage: "((?:[^"\\]|\\.)*)"/
    .exec(message)?.[1]
    ?.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  const cause = inner === 'Encoded failure' ? (recorded ?? inner) : (inner ?? message);
  return cause.split('\n')[0] ?? '';
}

export interface ReplayFailure {
  workflowId: string;
  runId: string;
  workflowType: string;
  /** The error's class name (DeterminismViolationError, ReplayError) and its message's first line. */
  error: { name: string; message: string };
}

export interface TypeCounts {
  workflowType: string;
  /** Runs listed (open, and closed within the window). */
  listed: number;
  replayed: number;
  passed: number;
  failed: number;
  /** Pinned to another build: they stay on it, so not replayed (unless --all). */
  pinnedElsewhere: number;
  /** Eligible but beyond the sample. */
  notSampled: number;
  /** Listed, then gone before its history was read (deleted at the end of the namespace's retention). */
  gone: number;
}

export interface ReplayReport {
  address: string;
  namespace: string;
  taskQueue: string;
  bundle: string;
  /** The checked build (`deploymentName.buildId`). */
  build: string;
  /** ISO time from which closed runs were listed; null: open runs only. */
  closedSince: string | null;
  sample: number;
  all: boolean;
  types: TypeCounts[];
  /** Runs left on other builds, per version (`deploymentName.buildId`), with their count per workflow type. */
  staysOn: { version: string; runs: number; workflowTypes: Record<string, number> }[];
  failures: ReplayFailure[];
  /** A listing was cut at the listing limit: the counts are lower bounds. */
  listingCapped: boolean;
  /**
   * Open runs only the bridge release can run (src/temporal/bridge-release.ts), and why the checked build may not be
   * made current while they are: a refusal fails the gate even when every replay passed.
   */
  bridge?: { unversioned: number; bridgePinned: number; refusal?: string };
  ok: boolean;
}

/** Counts of one workflow type, all zero. */
export function emptyCounts(workflowType: string): TypeCounts {
  return { workflowType, listed: 0, replayed: 0, passed: 0, failed: 0, pinnedElsewhere: 0, notSampled: 0, gone: 0 };
}

export function stayingVersion(placement: Placement): string | undefined {
  return placement.kind === 'pinned' && !placement.here ? versionString(placement.version) : undefined;
}

/** 0: every replayed run passed; 1: a replay failed. (2, a usage or connection error, is the entry point's.) */
export function exitCodeOf(report: ReplayReport): 0 | 1 {
  return report.failures.length === 0 && report.bridge?.refusal === undefined ? 0 : 1;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '),
  );
}

/** The report for a person: a line per workflow type, the runs left on other builds, then each failure. */
export function formatReport(report: ReplayReport): string {
  const lines = [
    `replay-check: namespace ${report.namespace} at ${report.address}, task queue ${report.taskQueue}`,
    `bundle ${report.bundle} (build ${report.build})`,
    `runs: open${report.closedSince ? `, and closed since ${report.closedSince}` : ' only'}; at most ${report.sample} ` +
      `per workflow type${report.all ? '; every run replayed (--all)' : '; runs pinned to other builds skipped'}`,
    '',
  ];
  if (report.types.length === 0) lines.push('no workflows listed');
  else {
    const header = ['workflow type', 'listed', 'replayed', 'passed', 'failed', 'pinned elsewhere'];
    const rows = report.types.map((t) =>
      [t.workflowType, t.listed, t.replayed, t.passed, t.failed, t.pinnedElsewhere].map(String),
    );
    lines.push(...table([header, ...rows]));
  }
  const gone = report.types.reduce((sum, t) => sum + t.gone, 0);
  if (gone > 0) lines.push(`${gone} listed run(s) were gone before their history was read (retention)`);
  if (report.listingCapped) lines.push('the listing was cut at its limit: the counts are lower bounds');
  for (const stay of report.staysOn) {
    const types = Object.entries(stay.workflowTypes)
      .map(([type, n]) => `${type} ${n}`)
      .join(', ');
    lines.push(`stays on ${stay.version}: ${stay.runs} run(s) (${types})`);
  }
  if (report.failures.length > 0) {
    lines.push('');
    for (const f of report.failures)
      lines.push(`FAILED ${f.workflowType} ${f.workflowId} (run ${f.runId}): ${f.error.name}: ${f.error.message}`);
  }
  const replayed = report.types.reduce((sum, t) => sum + t.replayed, 0);
  if (report.bridge?.refusal !== undefined) lines.push('', `REFUSED: ${report.bridge.refusal}`);
  lines.push(
    '',
    report.failures.length === 0
      ? `${report.ok ? 'ok' : 'FAILED'}: ${replayed} run(s) replayed, none failed`
      : `FAILED: ${report.failures.length} of ${replayed} replayed run(s) failed`,
  );
  return `${lines.join('\n')}\n`;
}
