import { spawn } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The replay gate as the cluster's rolling upgrade runs it: `node dist/tools/replay-check.js` (npm run replay-check),
 * the deploy procedure's check of a candidate build against the histories of the namespace, run as a separate
 * process with the workers' environment. Its contract: `--bundle <workflow-bundle.js>`, `--build-id`, `--since`,
 * `--sample`, `--all`, `--json`; exit 0 every replayed run passed, 1 a replay failed (the report names each
 * workflow), 2 a usage or connection error.
 */

export const REPLAY_CHECK_SCRIPT = join('dist', 'tools', 'replay-check.js');

/** What the run reads of the tool's `--json` report. */
export interface GateReport {
  build?: string;
  types?: { workflowType: string; replayed: number; failed: number; pinnedElsewhere?: number }[];
  staysOn?: { version: string; runs: number }[];
  failures?: { workflowId: string; runId: string; workflowType: string; error?: { name?: string; message?: string } }[];
}

export type GateRun = { missing: true } | { missing?: false; code: number | null; report?: GateReport; args: string[] };

/** Runs the tool with `args` (and `--json`); its stderr goes to `logFile`. `missing`: not in this build's dist. */
export function runReplayGate(root: string, env: NodeJS.ProcessEnv, args: string[], logFile: string): Promise<GateRun> {
  const script = join(root, REPLAY_CHECK_SCRIPT);
  if (!existsSync(script)) return Promise.resolve({ missing: true });
  return new Promise((resolve, reject) => {
    const fd = openSync(logFile, 'a');
    const child = spawn(process.execPath, [script, ...args, '--json'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', fd],
    });
    closeSync(fd);
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (c: Buffer) => chunks.push(c));
    child.once('error', reject);
    child.once('close', (code) => {
      const stdout = Buffer.concat(chunks).toString('utf8');
      appendFileSync(logFile, `replay-check ${args.join(' ')}: exit ${code}\n${stdout}\n`);
      let report: GateReport | undefined;
      try {
        report = JSON.parse(stdout) as GateReport;
      } catch {
        // no report (exit 2): the code says why, the log has the message
      }
      resolve({ code, report, args });
    });
  });
}

const replayed = (r: GateReport | undefined) => (r?.types ?? []).reduce((n, t) => n + t.replayed, 0);
const staying = (r: GateReport | undefined) => (r?.staysOn ?? []).reduce((n, s) => n + s.runs, 0);

export interface GateVerdict {
  /** One line for the run's output. */
  summary: string;
  problems: string[];
}

/**
 * A gate that must pass: exit 0, with at least `minReplayed` runs replayed (0 for the check before the switch,
 * where every open run is pinned to the old build and stays on it).
 */
export function judgePassingGate(name: string, run: GateRun, minReplayed: number): GateVerdict {
  if (run.missing) return { summary: `${name}: skipped (tool missing)`, problems: [] };
  const n = replayed(run.report);
  const summary = `${name}: exit ${run.code ?? 'signal'}, ${n} run(s) replayed, ${staying(run.report)} stay on other builds`;
  const problems: string[] = [];
  if (run.code !== 0) {
    const failed = (run.report?.failures ?? []).map((f) => `${f.workflowId} (${f.error?.name ?? '?'})`);
    problems.push(
      `${name} exited ${run.code ?? 'on a signal'}, expected 0${failed.length ? `: ${failed.join(', ')}` : ''}`,
    );
  } else if (n < minReplayed) problems.push(`${name} replayed ${n} run(s), expected at least ${minReplayed}`);
  return { summary, problems };
}

/**
 * A gate that must fail: exit 1, naming every workflow of `mustName` (the histories the incompatible change breaks)
 * and no workflow of another type than `failingType` (the change touches that workflow type only).
 */
export function judgeFailingGate(name: string, run: GateRun, mustName: string[], failingType: string): GateVerdict {
  if (run.missing) return { summary: `${name}: skipped (tool missing)`, problems: [] };
  const failures = run.report?.failures ?? [];
  const named = new Set(failures.map((f) => f.workflowId));
  const summary =
    `${name}: exit ${run.code ?? 'signal'}, ${failures.length} of ${replayed(run.report)} replayed run(s) failed ` +
    `(${named.size} workflows named)`;
  const problems: string[] = [];
  if (run.code !== 1) problems.push(`${name} exited ${run.code ?? 'on a signal'}, expected 1`);
  const unnamed = mustName.filter((id) => !named.has(id));
  if (unnamed.length > 0) problems.push(`${name} did not name ${unnamed.length} workflow(s): ${unnamed.join(', ')}`);
  const others = failures.filter((f) => f.workflowType !== failingType);
  if (others.length > 0) {
    problems.push(
      `${name} failed workflows it does not change: ${others.map((f) => `${f.workflowId} (${f.workflowType})`).join(', ')}`,
    );
  }
  return { summary, problems };
}
