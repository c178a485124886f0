import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import pino from 'pino';
import { freeLoopbackPort } from '../../src/temporal/free-port';
import { bundleFiles, buildWorkflowBundle } from '../../src/worker/prebuilt-workflow-bundle';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { NO_TRACING_SINKS } from '../../src/telemetry/tracing';
import { findTemporalCli } from '../../src/temporal/binaries';
import { buildIdOf } from '../../src/temporal/worker-deployment';
import type { ReplayReport } from '../../src/tools/replay-selection';
import { finishProbeSignal } from '../fixtures/replay-probe-workflows';
import { sharedBuild } from '../helpers/build';
import { TEST_MERCHANT } from '../helpers/merchants';
import { startTestStack, type TestStack } from '../helpers/stack';
import { bundleWorkflows, eventually, TEST_PAYLOAD_ENCRYPTION_KEYS } from '../helpers/temporal';

/**
 * `npm run replay-check` (src/tools/replay-check.ts) as an operator runs it: the build output started as a child
 * process, against the suite's real dev server, with the worker's variables. The runs it checks come from the
 * whole stack (finance applications, a consent refresh) and from a versioned worker started here (pinned runs).
 */
const root = join(__dirname, '..', '..');
const silent = pino({ level: 'silent' });
const execFileAsync = promisify(execFile);
const VERSIONING_BEHAVIOR = defineSearchAttributeKey('TemporalWorkflowVersioningBehavior', SearchAttributeType.KEYWORD);

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

describe('npm run replay-check', () => {
  // The run's shared build (tsc, then the plain workflow bundle: test/helpers/build.ts), and beside it, inside the
  // project so that node_modules resolves (by its real path, as webpack resolves the entry through a node_modules
  // symlink to it), a candidate build of this file's own.
  const cache = join(root, 'node_modules', '.cache', 'paylater-tests');
  mkdirSync(cache, { recursive: true });
  const real = realpathSync(cache);
  let out: string;
  const candidate = mkdtempSync(join(real, 'replay-check-candidate-'));
  const cwd = mkdtempSync(join(tmpdir(), 'paylater-replay-check-'));
  let stack: TestStack;
  let address: string;
  const finished: WorkflowHandle[] = [];

  /** The tool in a clean environment (no .env, no Temporal profile): the worker's variables only. */
  function replayCheck(args: string[], env: Record<string, string>, dir = cwd): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [join(out, 'tools', 'replay-check.js'), ...args], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: dir, ...env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
  }
  const stackEnv = () => ({
    TEMPORAL_ADDRESS: address,
    TASK_QUEUE: stack.t.taskQueue,
    PAYLOAD_ENCRYPTION_KEYS: TEST_PAYLOAD_ENCRYPTION_KEYS,
  });
  const report = (run: Run): ReplayReport => {
    if (run.status === 2) throw new Error(`replay-check exited 2: ${run.stderr}`);
    return JSON.parse(run.stdout) as ReplayReport;
  };
  /** The runs of the task queue by workflow type, as visibility lists them now. */
  async function listedTypes(query: string): Promise<Record<string, number>> {
    const types: Record<string, number> = {};
    for await (const info of stack.t.client.workflow.list({ query })) types[info.type] = (types[info.type] ?? 0) + 1;
    return types;
  }

  const refs = { done: `rc-done-${randomUUID()}`, open: `rc-open-${randomUUID()}` };
  const consentId = `rc-${randomUUID()}`;

  beforeAll(async () => {
    out = await sharedBuild();
    const codePath = join(out, bundleFiles(false).code);
    // The stack runs this very build's bundle, as workers deployed from it would.
    stack = await startTestStack({ workflowBundle: { codePath } });
    address = stack.t.address;

    // A finance application that ends, one that stays open, and a refresh waiting for a bank that never answers.
    stack.sandbox.control.setApplicationScript(
      { steps: ['IN_PROGRESS', 'COMPLETED'].map((status) => ({ status, afterMs: 300 })) },
      { merchantReference: refs.done },
    );
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: refs.open });
    for (const merchantReference of Object.values(refs)) {
      const res = await stack.facade('/applications', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/done' }),
      });
      expect(res.status).toBe(201);
    }
    stack.sandbox.control.setConsent(consentId, {
      banks: [{ bankCode: 'QUIET', bankName: 'Quiet Bank', accounts: ['q-1'], neverAnswers: true }],
    });
    const refresh = await stack.facade(`/consents/${consentId}/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ expectedBankCodes: ['QUIET'], timeout: '30m' }),
    });
    expect(refresh.status).toBe(202);
    await eventually(async () => {
      const res = await stack.facade(`/applications/${refs.done}`);
      return ((await res.json()) as { done?: boolean }).done ? true : undefined;
    });
    // Visibility is eventually consistent: wait until it lists what the check will list.
    const tq = `TaskQueue = '${stack.t.taskQueue}'`;
    await eventually(async () => {
      const closed = await listedTypes(`${tq} AND ExecutionStatus != 'Running'`);
      const open = await listedTypes(`${tq} AND ExecutionStatus = 'Running'`);
      return closed.financeApplicationWorkflow === 1 &&
        open.financeApplicationWorkflow === 1 &&
        open.consentRefreshWorkflow === 1
        ? true
        : undefined;
    });
  }, 300_000);

  afterAll(async () => {
    for (const handle of finished) await handle.terminate('test done').catch(() => undefined);
    for (const id of [financeApplicationWorkflowId(TEST_MERCHANT, refs.open), `consent-refresh:${consentId}`])
      await stack?.t.client.workflow
        .getHandle(id)
        .terminate('test done')
        .catch(() => undefined);
    await stack?.close();
    for (const dir of [candidate, cwd]) rmSync(dir, { recursive: true, force: true });
  });

  it('replays the open and recently closed runs of the stack against this build, and passes (exit 0)', async () => {
    // The stack's workers are unversioned, as before Worker Versioning: a build after the bridge is refused over its
    // open runs (src/temporal/bridge-release.ts), which the bridge itself may take over.
    const refused = report(await replayCheck(['--json'], stackEnv()));
    expect(refused.ok).toBe(false);
    expect(refused.failures).toEqual([]);
    expect(refused.bridge?.unversioned).toBeGreaterThan(0);
    expect(refused.bridge?.refusal).toContain('unversioned run(s)');
    const manifest = JSON.parse(readFileSync(join(out, 'workflow-bundle.json'), 'utf8')) as { inputsSha256: string };
    const asBridge = ['--bridge-build-id', buildIdOf(manifest.inputsSha256)];

    const run = await replayCheck(['--json', ...asBridge], stackEnv());
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const result = report(run);
    // Every listed run, of every type the stack started, was replayed and passed: none is pinned anywhere.
    const listed = await listedTypes(`TaskQueue = '${stack.t.taskQueue}'`);
    expect(result.types.map((t) => t.workflowType).sort()).toEqual(Object.keys(listed).sort());
    expect(result.types.find((t) => t.workflowType === 'financeApplicationWorkflow')).toMatchObject({
      listed: 2,
      replayed: 2,
      passed: 2,
      failed: 0,
      pinnedElsewhere: 0,
    });
    for (const t of result.types) expect(t).toMatchObject({ replayed: t.listed, passed: t.listed, failed: 0 });
    expect(result.types.find((t) => t.workflowType === 'consentRefreshWorkflow')?.passed).toBe(1);
    expect(result).toMatchObject({ failures: [], staysOn: [], ok: true, taskQueue: stack.t.taskQueue });

    // The text form: a line per type, and the verdict.
    const text = await replayCheck(['--sample', '1', ...asBridge], stackEnv());
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^financeApplicationWorkflow +2 +1 +1 +0 +0$/m);
    expect(text.stdout).toMatch(/^ok: \d+ run\(s\) replayed, none failed$/m);
  });

  it('fails (exit 1) against a candidate bundle whose finance application starts with another command, naming each run', async () => {
    // The candidate build: this build's workflow code with a timer before the finance application's first command.
    for (const dir of ['workflows', 'shared']) cpSync(join(out, dir), join(candidate, dir), { recursive: true });
    const workflowFile = join(candidate, 'workflows', 'finance-application', 'workflow.js');
    expect(existsSync(workflowFile)).toBe(true); // appending to a moved file would create a new one, changing nothing
    appendFileSync(
      workflowFile,
      [
        '',
        'const replayCheckOriginal = exports.financeApplicationWorkflow;',
        'exports.financeApplicationWorkflow = async function financeApplicationWorkflow(input) {',
        '  await require("@temporalio/workflow").sleep(1);',
        '  return replayCheckOriginal(input);',
        '};',
        '',
      ].join('\n'),
    );
    const { codePath, manifest } = await buildWorkflowBundle({ distDir: candidate, logger: silent });

    const run = await replayCheck(['--json', '--bundle', codePath], stackEnv());
    expect(run.status).toBe(1);
    const result = report(run);
    expect(result.build).toBe(`paylater.${buildIdOf(manifest.inputsSha256)}`);
    const ids = Object.values(refs).map((ref) => financeApplicationWorkflowId(TEST_MERCHANT, ref));
    expect(result.failures.map((f) => f.workflowId).sort()).toEqual(ids.sort());
    for (const failure of result.failures)
      expect(failure).toMatchObject({
        workflowType: 'financeApplicationWorkflow',
        runId: expect.any(String),
        error: { name: 'DeterminismViolationError', message: expect.stringContaining('Nondeterminism') },
      });
    // The other types did not change: they pass.
    for (const t of result.types.filter((t) => t.workflowType !== 'financeApplicationWorkflow'))
      expect(t).toMatchObject({ failed: 0, passed: t.listed });

    const text = await replayCheck(['--bundle', codePath], stackEnv());
    expect(text.status).toBe(1);
    for (const id of ids)
      expect(text.stdout).toMatch(new RegExp(`^FAILED financeApplicationWorkflow ${id} \\(run `, 'm'));
    expect(text.stdout).toMatch(/^FAILED: 2 of \d+ replayed run\(s\) failed$/m);
  });

  it('skips runs pinned to another build (they stay on it), replays auto-upgrade ones and those pinned to the checked build', async () => {
    // A versioned worker of another build, made current: the runs it takes are pinned to it.
    const deploymentName = `replay-test-${randomUUID().slice(0, 8)}`;
    const taskQueue = `replay-pinned-${randomUUID()}`;
    const worker = await Worker.create({
      connection: stack.t.nativeConnection,
      taskQueue,
      dataConverter: stack.dataConverter,
      workflowBundle: await bundleWorkflows(require.resolve('../fixtures/replay-probe-workflows')),
      sinks: NO_TRACING_SINKS,
      workerDeploymentOptions: {
        useWorkerVersioning: true,
        version: { deploymentName, buildId: 'wf-elsewhere' },
        defaultVersioningBehavior: 'PINNED',
      },
    });
    await worker.runUntil(async () => {
      const cli = findTemporalCli();
      if (!cli) throw new Error('no Temporal CLI installed');
      // Retried until the version's worker has polled (the server knows the version only then).
      await eventually(async () => {
        await execFileAsync(cli, [
          'worker',
          'deployment',
          'set-current-version',
          '--address',
          address,
          '--deployment-name',
          deploymentName,
          '--build-id',
          'wf-elsewhere',
          '--yes',
        ]);
        return true;
      }, 60_000);
      for (const [name, options] of [
        ['pinned', {}],
        ['auto', { versioningOverride: 'AUTO_UPGRADE' as const }],
      ] as const) {
        finished.push(
          await stack.t.client.workflow.start('replayProbeWorkflow', {
            taskQueue,
            workflowId: `replay-probe-${name}-${randomUUID()}`,
            ...options,
          }),
        );
      }
      // Until visibility shows where each run is (after its first workflow task on the versioned worker).
      await eventually(async () => {
        const behaviors = new Set<string | undefined>();
        for await (const info of stack.t.client.workflow.list({ query: `TaskQueue = '${taskQueue}'` }))
          behaviors.add(info.typedSearchAttributes.get(VERSIONING_BEHAVIOR));
        return behaviors.has('Pinned') && behaviors.has('AutoUpgrade') ? true : undefined;
      });
    });
    const [pinned, auto] = finished.slice(-2) as [WorkflowHandle, WorkflowHandle];
    const env = { ...stackEnv(), TASK_QUEUE: taskQueue, WORKER_DEPLOYMENT_NAME: deploymentName };
    const version = `${deploymentName}.wf-elsewhere`;

    // This build: the pinned run stays on wf-elsewhere, not replayed; the auto-upgrade one is replayed (and fails:
    // its workflow type is not in this build, which is how the test sees that it was replayed).
    const checked = await replayCheck(['--json'], env);
    expect(checked.status).toBe(1);
    const result = report(checked);
    expect(result.types).toEqual([
      expect.objectContaining({
        workflowType: 'replayProbeWorkflow',
        listed: 2,
        replayed: 1,
        failed: 1,
        pinnedElsewhere: 1,
      }),
    ]);
    expect(result.failures).toEqual([
      expect.objectContaining({
        workflowId: auto.workflowId,
        error: expect.objectContaining({
          message:
            "Failed to initialize workflow of type 'replayProbeWorkflow': no such function is exported by the workflow bundle",
        }),
      }),
    ]);
    expect(result.staysOn).toEqual([{ version, runs: 1, workflowTypes: { replayProbeWorkflow: 1 } }]);
    const text = await replayCheck([], env);
    expect(text.stdout).toContain(`stays on ${version}: 1 run(s) (replayProbeWorkflow 1)`);

    // Checked as build wf-elsewhere: the pinned run is this build's, so it is replayed.
    const asElsewhere = report(await replayCheck(['--json', '--build-id', 'wf-elsewhere'], env));
    expect(asElsewhere.types[0]).toMatchObject({ listed: 2, replayed: 2, pinnedElsewhere: 0 });
    expect(asElsewhere.failures.map((f) => f.workflowId).sort()).toEqual([pinned.workflowId, auto.workflowId].sort());
    expect(asElsewhere.staysOn).toEqual([]);

    // --all: every run, the pinned one too (still counted as staying elsewhere).
    const all = report(await replayCheck(['--json', '--all'], env));
    expect(all.types[0]).toMatchObject({ listed: 2, replayed: 2, pinnedElsewhere: 1 });
    expect(all.failures).toHaveLength(2);
    for (const handle of [pinned, auto]) await handle.signal(finishProbeSignal);
  });

  it('with no configuration, checks the embedded dev server of `npm start`; when nothing answers there, says so (exit 2)', async () => {
    // Only the dev server's port (npm start's TEMPORAL_DEV_SERVER_PORT): here the suite's server, whose task queue
    // `paylater` (the default) holds nothing.
    const [host, port] = address.split(':') as [string, string];
    expect(['127.0.0.1', 'localhost']).toContain(host);
    const embedded = await replayCheck([], { TEMPORAL_DEV_SERVER_PORT: port });
    expect(embedded.status).toBe(0);
    expect(embedded.stdout).toContain(`replay-check: namespace default at 127.0.0.1:${port}, task queue paylater`);
    expect(embedded.stdout).toContain('no workflows listed');

    const nothing = await replayCheck([], { TEMPORAL_DEV_SERVER_PORT: String(await freeLoopbackPort()) });
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toMatch(/^replay-check: nothing answers at 127\.0\.0\.1:\d+, .*`npm start`/);
    expect(nothing.stderr).not.toMatch(/\n\s+at /);
    expect(nothing.stdout).toBe('');
  });

  it('exits 2 with a clear message on a usage or configuration mistake', async () => {
    const usage = await replayCheck(['--sample', 'many'], stackEnv());
    expect(usage).toMatchObject({ status: 2, stdout: '' });
    expect(usage.stderr).toMatch(
      /^replay-check: --sample must be a whole number from 1 to 10000 \(got "many"\)\nusage:/,
    );

    const config = await replayCheck([], { TEMPORAL_ADDRESS: 'not an address' });
    expect(config.status).toBe(2);
    expect(config.stderr).toContain('TEMPORAL_ADDRESS: must be host:port');

    const bundle = await replayCheck(['--bundle', join(cwd, 'missing.js')], stackEnv());
    expect(bundle.status).toBe(2);
    expect(bundle.stderr).toContain('missing.js: no such file');
    for (const run of [usage, config, bundle]) expect(run.stderr).not.toMatch(/\n\s+at /);

    // `.env` in the working directory, as the worker reads it: it fills gaps, the environment wins.
    const withDotenv = mkdtempSync(join(tmpdir(), 'paylater-replay-check-dotenv-'));
    writeFileSync(join(withDotenv, '.env'), 'PORT=port-from-dotenv\nINTERNAL_PORT=port-from-dotenv\n');
    const dotenv = await replayCheck([], { INTERNAL_PORT: '3999' }, withDotenv);
    rmSync(withDotenv, { recursive: true, force: true });
    expect(dotenv.status).toBe(2);
    expect(dotenv.stderr).toContain('PORT: must be a port number');
    expect(dotenv.stderr).not.toContain('INTERNAL_PORT');

    const help = await replayCheck(['--help'], {});
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('exit status: 0 every replayed run passed; 1 a replay failed; 2 a usage');
  });
});
