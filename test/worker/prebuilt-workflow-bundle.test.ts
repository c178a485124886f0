import { NO_TRACING_SINKS } from '../../src/telemetry/tracing';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import pino from 'pino';
import ts from 'typescript';
import { StartupError } from '../../src/entry/run-entry';
import {
  buildWorkflowBundle,
  installedSdkVersion,
  loadWorkflowBundle,
  TRACING_WORKFLOW_BUNDLE_FILE,
  WORKFLOW_BUNDLE_FILE,
  WORKFLOW_BUNDLE_MANIFEST,
  workflowInputsHash,
} from '../../src/worker/prebuilt-workflow-bundle';
import { connectTestTemporal } from '../helpers/temporal';

/**
 * The build and the start-up check of the prebuilt bundle, on a small compiled workflow (CommonJS, as tsc emits
 * it): built once with the real bundler, then copied to a temp dir per case and altered there.
 */
const root = join(__dirname, '..', '..');
const silent = pino({ level: 'silent' });

/** Webpack resolves @temporalio/workflow from the folder upwards: builds happen inside the project. */
function projectTempDir(prefix: string): string {
  const parent = join(root, 'node_modules', '.cache', 'paylater-tests');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(join(parent, prefix));
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

/** The project's failure converter as tsc compiles it into dist/shared (the build bundles it). */
const COMPILED_FAILURE_CONVERTER = ts.transpileModule(
  readFileSync(join(root, 'src', 'shared', 'failure-converter.ts'), 'utf8'),
  { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } },
).outputText;

/** The interceptor module every bundle carries (src/workflows/interceptors.ts): here the SDK's tracing ones alone. */
const COMPILED_INTERCEPTORS =
  '"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n' +
  'exports.interceptors = require("@temporalio/interceptors-opentelemetry/lib/workflow-interceptors").interceptors;\n';

const COMPILED_WORKFLOWS = {
  'workflows/index.js':
    '"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n' +
    'exports.greetWorkflow = greetWorkflow;\nexports.refuseWorkflow = refuseWorkflow;\n' +
    'const workflow_1 = require("@temporalio/workflow");\nconst greeting_1 = require("../shared/greeting");\n' +
    'async function greetWorkflow(input) { return (0, greeting_1.greet)(input.name); }\n' +
    'async function refuseWorkflow(input) { throw workflow_1.ApplicationFailure.nonRetryable(`refused ${input.name}`, "Refused"); }\n',
  'workflows/interceptors.js': COMPILED_INTERCEPTORS,
  'shared/failure-converter.js': COMPILED_FAILURE_CONVERTER,
  'shared/greeting.js':
    '"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\n' +
    'exports.greet = greet;\nfunction greet(name) { return `hello ${name}`; }\n',
};

describe('the prebuilt workflow bundle', () => {
  let built: string;
  const copies: string[] = [];
  /** A copy of the built dist files (bundle, manifest, workflows, shared) in a temp dir of its own. */
  const copyOfBuild = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'paylater-bundle-'));
    copies.push(dir);
    cpSync(built, dir, { recursive: true });
    return dir;
  };

  beforeAll(async () => {
    built = projectTempDir('bundle-');
    writeFiles(built, COMPILED_WORKFLOWS);
    await buildWorkflowBundle({ distDir: built, logger: silent });
  });
  afterAll(() => {
    for (const dir of [built, ...copies]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('bundles the tracing interceptors in the tracing bundle only, and loads the one asked for', async () => {
    // Built inside the project (webpack resolves the SDK from there), beside a copy of the default bundle.
    const dir = projectTempDir('bundle-tracing-');
    copies.push(dir);
    cpSync(built, dir, { recursive: true });
    await buildWorkflowBundle({ distDir: dir, logger: silent, tracing: true });
    const SDK_TRACING_INTERCEPTORS = 'interceptors-opentelemetry/lib/workflow-interceptors';
    expect(readFileSync(join(dir, WORKFLOW_BUNDLE_FILE), 'utf8')).not.toContain(SDK_TRACING_INTERCEPTORS);
    expect(readFileSync(join(dir, TRACING_WORKFLOW_BUNDLE_FILE), 'utf8')).toContain(SDK_TRACING_INTERCEPTORS);
    expect(loadWorkflowBundle(dir, { tracing: true }).workflowBundle.codePath).toBe(
      join(dir, TRACING_WORKFLOW_BUNDLE_FILE),
    );
    expect(loadWorkflowBundle(dir).workflowBundle.codePath).toBe(join(dir, WORKFLOW_BUNDLE_FILE));
    // Each is checked on its own: the tracing one missing is refused when asked for, whatever the other.
    rmSync(join(dir, TRACING_WORKFLOW_BUNDLE_FILE));
    expect(() => loadWorkflowBundle(dir, { tracing: true })).toThrow(/No prebuilt workflow bundle at .*tracing/);
  });

  it('writes the bundle and a manifest with the SDK version and the inputs hash', () => {
    const manifest = JSON.parse(readFileSync(join(built, WORKFLOW_BUNDLE_MANIFEST), 'utf8'));
    expect(manifest).toMatchObject({ sdkVersion: installedSdkVersion(), inputsSha256: workflowInputsHash(built) });
    expect(readFileSync(join(built, WORKFLOW_BUNDLE_FILE), 'utf8')).toContain('greetWorkflow');
  });

  it('accepts a fresh bundle, and a worker runs workflows from it on the real server', async () => {
    const dir = copyOfBuild();
    const { workflowBundle, manifest } = loadWorkflowBundle(dir);
    expect(workflowBundle.codePath).toBe(join(dir, WORKFLOW_BUNDLE_FILE));
    expect(manifest.sdkVersion).toBe(installedSdkVersion());

    const t = await connectTestTemporal();
    try {
      const worker = await Worker.create({
        connection: t.nativeConnection,
        taskQueue: t.taskQueue,
        dataConverter: t.dataConverter,
        workflowBundle,
        sinks: NO_TRACING_SINKS,
      });
      // The bundle's failure converter encodes a workflow's failure message; the codec then encrypts it.
      const marker = `customer-${randomUUID()}`;
      const workflowId = `refuse-${randomUUID()}`;
      const [greeting, failed] = await worker.runUntil(async () => [
        await t.client.workflow.execute('greetWorkflow', {
          taskQueue: t.taskQueue,
          workflowId: `greet-${randomUUID()}`,
          args: [{ name: 'bundle' }],
        }),
        await t.client.workflow
          .execute('refuseWorkflow', { taskQueue: t.taskQueue, workflowId, args: [{ name: marker }] })
          .catch((err: unknown) => err),
      ]);
      expect(greeting).toBe('hello bundle');
      expect(failed).toBeInstanceOf(WorkflowFailedError);
      expect((failed as WorkflowFailedError).cause).toBeInstanceOf(ApplicationFailure);
      expect((failed as WorkflowFailedError).cause?.message).toBe(`refused ${marker}`);
      const history = await t.client.workflow.getHandle(workflowId).fetchHistory();
      const failedEvent = history.events?.find(
        (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
      );
      const failure = failedEvent?.workflowExecutionFailedEventAttributes?.failure;
      expect(failure?.message).toBe('Encoded failure');
      expect(failure?.stackTrace).toBeFalsy();
      expect(Buffer.from(failure!.encodedAttributes!.metadata!.encoding!).toString()).toBe('binary/encrypted');
      expect(Buffer.from(failure!.encodedAttributes!.data!).toString('latin1')).not.toContain(marker);
    } finally {
      await t.close();
    }
  });

  it('refuses to start without a bundle, naming npm run build', () => {
    const dir = copyOfBuild();
    rmSync(join(dir, WORKFLOW_BUNDLE_FILE));
    expect(() => loadWorkflowBundle(dir)).toThrow(StartupError);
    expect(() => loadWorkflowBundle(dir)).toThrow(
      /No prebuilt workflow bundle at .*workflow-bundle\.js.*npm run build/,
    );
  });

  it('refuses a bundle without its manifest', () => {
    const dir = copyOfBuild();
    rmSync(join(dir, WORKFLOW_BUNDLE_MANIFEST));
    expect(() => loadWorkflowBundle(dir)).toThrow(/No prebuilt workflow bundle.*npm run build/);
  });

  it.each([
    [
      'a changed shared module',
      (dir: string) => writeFiles(dir, { 'shared/greeting.js': 'exports.greet = () => "hi";\n' }),
    ],
    ['a changed workflow', (dir: string) => writeFiles(dir, { 'workflows/index.js': '// edited\n' })],
    ['a new workflow file', (dir: string) => writeFiles(dir, { 'workflows/extra/more.js': 'exports.x = 1;\n' })],
    ['a removed file', (dir: string) => rmSync(join(dir, 'shared/greeting.js'))],
  ])('refuses a stale bundle: %s', (_case, alter) => {
    const dir = copyOfBuild();
    alter(dir);
    expect(() => loadWorkflowBundle(dir)).toThrow(StartupError);
    expect(() => loadWorkflowBundle(dir)).toThrow(/workflow-bundle\.js is stale: .*npm run build/);
  });

  it('refuses a bundle built with another SDK version', () => {
    const dir = copyOfBuild();
    const path = join(dir, WORKFLOW_BUNDLE_MANIFEST);
    writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, 'utf8')), sdkVersion: '0.0.1' }));
    expect(() => loadWorkflowBundle(dir)).toThrow(/built with @temporalio\/worker 0\.0\.1.*npm run build/);
  });

  it('refuses a bundle altered after the build', () => {
    const dir = copyOfBuild();
    writeFileSync(join(dir, WORKFLOW_BUNDLE_FILE), '/* truncated */');
    expect(() => loadWorkflowBundle(dir)).toThrow(/changed after it was built.*npm run build/);
  });

  it('ignores files beside the inputs (source maps, other dist folders)', () => {
    const dir = copyOfBuild();
    writeFiles(dir, { 'shared/greeting.js.map': '{}', 'api/app.js': 'exports.app = 1;\n' });
    expect(() => loadWorkflowBundle(dir)).not.toThrow();
  });

  it('refuses to build workflow code that imports outside dist/workflows and dist/shared', async () => {
    const dir = projectTempDir('outside-');
    copies.push(dir);
    writeFiles(dir, {
      'workflows/index.js': 'exports.w = async () => require("../config").value;\n',
      'workflows/interceptors.js': COMPILED_INTERCEPTORS,
      'shared/failure-converter.js': COMPILED_FAILURE_CONVERTER,
      'config.js': 'exports.value = 1;\n',
    });
    await expect(buildWorkflowBundle({ distDir: dir, logger: silent })).rejects.toThrow(
      /imports files outside dist\/workflows and dist\/shared.*config\.js/,
    );
  });
});
