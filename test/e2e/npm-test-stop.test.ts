import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../helpers/temporal';
import { processTable, subtree, type ProcessRow } from '../helpers/process-tree';

/**
 * Stopping `npm test` stops everything it started (docs/testing.md, "Stopping a run"): the test scripts run jest through scripts/jest.mjs,
 * which runs it in a process group of its own and ends that group with npm. Each case runs `npm test` on fixtures
 * (test/fixtures/jest-stop/) holding the servers tests start: the global setup's dev server, the project's own dev
 * server (src/temporal/dev-server.ts, as `npm start` spawns it) and the SDK's time-skipping test server; once they
 * answer, it stops the run one way and checks, by pid and by process group, that no process of the run is left.
 */
const root = join(__dirname, '..', '..');

interface NpmTest {
  npm: ChildProcess;
  markers: string;
  output(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited(): boolean;
}

/** `npm test -- --testMatch <the fixtures> …args`. */
function npmTest(fixtures: string, options: { env?: Record<string, string>; args?: string[] } = {}): NpmTest {
  const markers = mkdtempSync(join(tmpdir(), 'paylater-jest-stop-'));
  let output = '';
  let exited = false;
  const npm = spawn(
    'npm',
    ['test', '--', '--testMatch', `**/test/fixtures/jest-stop/${fixtures}.fixture.ts`, ...(options.args ?? [])],
    {
      cwd: root,
      // Nothing of this run's environment (TEMPORAL_TEST_ADDRESS, PAYLATER_TEST_RUN, JEST_WORKER_ID): a run of its own.
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...(process.env.CI ? { CI: process.env.CI } : {}),
        JEST_STOP_MARKERS: markers,
        ...options.env,
      },
      // Not detached: npm and scripts/jest.mjs stay in this run's process group, so stopping this run stops them too
      // (and so the run they started). The inner jest leads a group of its own.
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  npm.stdout?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  npm.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => {
      exited = true;
      resolve({ code, signal });
    }),
  );
  return { npm, markers, output: () => output, exit, exited: () => exited };
}

/** Until every marker is written (the fixtures' servers answer); fails at once when npm ends first. */
async function markersWritten(run: NpmTest, names: string[]): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (!names.every((name) => existsSync(join(run.markers, name)))) {
    if (run.exited() || Date.now() > deadline) {
      throw new Error(
        `${run.exited() ? 'npm test ended' : 'no servers within 180 s'} before the fixtures' servers answered\n` +
          `--- npm test printed:\n${run.output().slice(-4000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `promise`, or an error naming `what` after `ms`: every wait here is bounded, so each test cleans up after itself. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A process still there (a zombie is not: it ended and holds nothing), the same process as `row` was. */
const sameLive = (table: ProcessRow[], row: ProcessRow): boolean =>
  table.some((r) => r.pid === row.pid && r.args === row.args && !r.stat.startsWith('Z'));

describe('stopping npm test stops everything it started', () => {
  // `timeout` signals npm, then its whole process group: npm and scripts/jest.mjs (jest leads a group of its own).
  const stops: [string, (t: { npm: number; launcher: number }) => void, NodeJS.Signals | undefined][] = [
    [
      'SIGTERM to npm and scripts/jest.mjs, as `timeout 60 npm test` sends it to its process group',
      (t) => [t.npm, t.launcher].forEach((pid) => process.kill(pid, 'SIGTERM')),
      'SIGTERM',
    ],
    ['SIGINT to npm alone, which forwards it (npm 11)', (t) => process.kill(t.npm, 'SIGINT'), 'SIGINT'],
    ['SIGKILL to npm: scripts/jest.mjs sees its parent gone', (t) => process.kill(t.npm, 'SIGKILL'), undefined],
    ['SIGKILL to scripts/jest.mjs: jest sees its parent gone', (t) => process.kill(t.launcher, 'SIGKILL'), undefined],
  ];

  it.each(stops)(
    '%s',
    async (_name, stop, endsBy) => {
      const run = npmTest('{dev-server,test-server}');
      let recorded: ProcessRow[] = [];
      let group = 0;
      try {
        await markersWritten(run, ['dev-server', 'test-server']);
        const table = processTable();
        const tree = subtree(table, run.npm.pid!);
        recorded = [...table.filter((r) => r.pid === run.npm.pid), ...tree];
        const launcher = tree.find((r) => r.ppid === run.npm.pid && r.args.includes('scripts/jest.mjs'));
        expect(launcher).toBeDefined(); // npm `exec`s it: npm's own child
        const jest = tree.find((r) => r.ppid === launcher!.pid);
        expect(jest?.args).toMatch(/jest/);
        group = jest!.pid;
        // Jest leads a process group, and everything below it is in that group: the servers as well.
        const underJest = subtree(table, jest!.pid);
        expect(jest!.pgid).toBe(jest!.pid);
        expect(underJest.filter((r) => r.pgid !== group).map((r) => r.args)).toEqual([]);
        // The global setup's dev server and the fixture's, the SDK's test server.
        expect(underJest.filter((r) => /temporal server start-dev/.test(r.args)).length).toBeGreaterThanOrEqual(2);
        expect(underJest.filter((r) => /temporal-test-server/.test(r.args)).length).toBeGreaterThanOrEqual(1);

        stop({ npm: run.npm.pid!, launcher: launcher!.pid });

        const exit = await within(run.exit, 60_000, 'npm test ending');
        // npm ends as its script did: by the signal it forwarded (scripts/jest.mjs ends by it once its group is gone).
        if (endsBy) expect(exit.signal).toBe(endsBy);
        const left = () =>
          processTable().filter(
            (r) => !r.stat.startsWith('Z') && (r.pgid === group || recorded.some((rec) => sameLive([r], rec))),
          );
        // Bounded: scripts/jest.mjs SIGKILLs what is left 10 s after the signal.
        await eventually(() => (left().length === 0 ? true : undefined), 30_000, 200).catch(() => undefined);
        expect(left().map((r) => `${r.pid} (group ${r.pgid}) ${r.args}`)).toEqual([]);
      } finally {
        // Whatever failed: nothing of the run outlives the test (npm and scripts/jest.mjs by pid, jest by its group).
        const table = processTable();
        const rows = recorded.length > 0 ? recorded : subtree(table, run.npm.pid!);
        if (!run.exited()) run.npm.kill('SIGKILL');
        for (const row of rows.filter((r) => sameLive(table, r))) process.kill(row.pid, 'SIGKILL');
        for (const pgid of new Set([group, ...rows.filter((r) => r.pgid === r.pid).map((r) => r.pgid)])) {
          try {
            if (pgid) process.kill(-pgid, 'SIGKILL');
          } catch {
            // gone, as it should be
          }
        }
        rmSync(run.markers, { recursive: true, force: true });
      }
    },
    300_000,
  );

  it("jest ending on its own: its exit code is npm's, arguments after -- reach jest, a process its test leaked is stopped", async () => {
    for (const [outcome, code] of [
      ['pass', 0],
      ['fail', 1],
    ] as const) {
      const results = join(tmpdir(), `paylater-jest-stop-${process.pid}-${outcome}.json`);
      // No server needed: an address given, the global setup starts none.
      const run = npmTest('leak', {
        env: { JEST_STOP_OUTCOME: outcome, TEMPORAL_TEST_ADDRESS: '127.0.0.1:1' },
        args: ['--json', `--outputFile=${results}`],
      });
      try {
        expect(await within(run.exit, 90_000, 'npm test ending')).toEqual({ code, signal: null });
        const json = JSON.parse(readFileSync(results, 'utf8')) as { numPassedTests: number; numFailedTests: number };
        expect(json).toMatchObject({ numPassedTests: code === 0 ? 1 : 0, numFailedTests: code });
        // scripts/jest.mjs exits only once jest's group is empty: the leaked process is gone already.
        const leaked = Number(readFileSync(join(run.markers, 'leaked'), 'utf8'));
        expect(processTable().filter((r) => r.pid === leaked && !r.stat.startsWith('Z'))).toEqual([]);
        expect(run.output()).toContain('jest exited; stopping what its tests left running');
      } finally {
        const marker = join(run.markers, 'leaked');
        const leaked = existsSync(marker) ? Number(readFileSync(marker, 'utf8')) : 0;
        if (leaked && processTable().some((r) => r.pid === leaked && !r.stat.startsWith('Z')))
          process.kill(leaked, 'SIGKILL');
        rmSync(results, { force: true });
        rmSync(run.markers, { recursive: true, force: true });
      }
    }
  }, 120_000);
});
