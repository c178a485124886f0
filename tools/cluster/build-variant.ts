import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pino from 'pino';
import { createLogger, type Logger } from '../../src/telemetry/logging';
import { bundleFiles, buildWorkflowBundle } from '../../src/worker/prebuilt-workflow-bundle';
import { buildIdOf } from '../../src/temporal/worker-deployment';

/**
 * A second build of the application from a compiled dist/: a copy with a change to the compiled workflow code and
 * its own workflow bundle (so its own manifest and build id), runnable as `node <distDir>/worker.js`. What the
 * cluster test's rolling upgrade deploys as build B (and checks as build C), and what a bench can deploy beside
 * `dist/` without a second checkout. The change is a text edit of the compiled JavaScript: each patch must match
 * exactly once, so a change to the workflow source that moves the text fails here, loudly, instead of building a
 * variant that does not differ.
 */

export interface SourcePatch {
  /** A file of dist, relative to it (`workflows/finance-application/workflow.js`). */
  file: string;
  /** Text that occurs exactly once in it. */
  find: string;
  /** What it becomes. */
  replace: string;
}

export interface VariantBuild {
  /** The copy's dist folder (`node <distDir>/worker.js` runs it). */
  distDir: string;
  /** Its workflow bundle (what `npm run replay-check -- --bundle` takes). */
  codePath: string;
  /** buildIdOf its bundle's inputs: the Worker Deployment build id its workers join as. */
  buildId: string;
}

const FINANCE_APPLICATION = 'workflows/finance-application/workflow.js';

/** The field build B's finance applications add to their final state (the behavioural change the test sees). */
export const VARIANT_MARK_FIELD = 'variantMark';

/**
 * A behavioural change that keeps every command: the finished application's state (the workflow's result) gains
 * `variantMark: <mark>`. A merchant's client sees it; a replay of an older history does not (a result's payload is
 * not compared), so the build is compatible with every recorded history, and the runs it executes are its alone.
 */
export function resultMarkPatch(mark: string): SourcePatch {
  const find = "workflow_1.log.info('Finance application finished',";
  return {
    file: FINANCE_APPLICATION,
    find,
    replace: `state.${VARIANT_MARK_FIELD} = ${JSON.stringify(mark)};\n    ${find}`,
  };
}

/**
 * An incompatible change: a one-millisecond timer before the finance application's first command. Every recorded
 * finance application history starts otherwise, so replaying any of them against this build fails (the replay
 * gate's negative case).
 */
export function timerAtStartPatch(): SourcePatch {
  const find = '(0, workflow_1.upsertSearchAttributes)([{ key: search_attributes_1.MerchantReference,';
  return { file: FINANCE_APPLICATION, find, replace: `await (0, workflow_1.sleep)(1);\n    ${find}` };
}

/** `text` (the compiled `patch.file`) with the patch applied; throws unless its text occurs exactly once. */
export function applyPatch(text: string, patch: SourcePatch): string {
  const at = text.indexOf(patch.find);
  if (at < 0 || text.indexOf(patch.find, at + 1) >= 0) {
    throw new Error(
      `${patch.file}: the patch's text occurs ${at < 0 ? 'nowhere' : 'more than once'} (the compiled code ` +
        `changed: update the patch): ${patch.find}`,
    );
  }
  return text.slice(0, at) + patch.replace + text.slice(at + patch.find.length);
}

/** The node_modules the compiled code resolves its packages from (the nearest above `dir`). */
function nodeModulesAbove(dir: string): string {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (existsSync(join(d, 'node_modules'))) return join(d, 'node_modules');
    if (dirname(d) === d) throw new Error(`no node_modules above ${dir}`);
  }
}

/**
 * Copies `fromDist` to `<toDir>/dist` (without source maps and the prebuilt bundles), applies `patches`, links
 * `<toDir>/node_modules` to the packages `fromDist` uses, and builds the copy's workflow bundle (with the tracing
 * interceptors too when `tracing`). `toDir` is replaced when it exists.
 */
export async function buildVariant(options: {
  fromDist: string;
  toDir: string;
  patches: SourcePatch[];
  logger: Logger;
  tracing?: boolean;
}): Promise<VariantBuild> {
  const { fromDist, toDir, patches, logger } = options;
  if (!existsSync(join(fromDist, 'worker.js'))) throw new Error(`${fromDist}/worker.js not found: npm run build first`);
  if (patches.length === 0) throw new Error('a variant without a patch is the same build');
  const distDir = join(resolve(toDir), 'dist');
  rmSync(toDir, { recursive: true, force: true });
  mkdirSync(toDir, { recursive: true });
  const prebuilt = new Set(
    [false, true].flatMap((tracing) => Object.values(bundleFiles(tracing)).map((f) => join(resolve(fromDist), f))),
  );
  cpSync(fromDist, distDir, {
    recursive: true,
    filter: (src) => !src.endsWith('.map') && !prebuilt.has(resolve(src)),
  });
  symlinkSync(nodeModulesAbove(fromDist), join(toDir, 'node_modules'), 'dir');
  for (const patch of patches) {
    const path = join(distDir, patch.file);
    writeFileSync(path, applyPatch(readFileSync(path, 'utf8'), patch));
  }
  let codePath = '';
  let buildId = '';
  for (const tracing of options.tracing ? [false, true] : [false]) {
    const built = await buildWorkflowBundle({ distDir, logger, tracing });
    if (!tracing) codePath = built.codePath;
    buildId = buildIdOf(built.manifest.inputsSha256);
  }
  return { distDir, codePath, buildId };
}

/**
 * `node dist-tools/tools/cluster/build-variant.js <fromDist> <toDir> <patch>...` (patch: `mark:<text>` or
 * `timer-at-start`): builds one variant and prints its VariantBuild as JSON on stdout. The cluster run builds its
 * variants in a child process this way, beside the flows of its first phase.
 */
if (require.main === module) {
  const [fromDist, toDir, ...names] = process.argv.slice(2);
  // Logs to stderr: stdout is the result.
  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'info',
    name: 'build-variant',
    destination: pino.destination(2),
  });
  const patches = names.map((name) => {
    if (name.startsWith('mark:')) return resultMarkPatch(name.slice('mark:'.length));
    if (name === 'timer-at-start') return timerAtStartPatch();
    throw new Error(`unknown patch ${name} (mark:<text> | timer-at-start)`);
  });
  if (!fromDist || !toDir || patches.length === 0) {
    process.stderr.write('usage: build-variant.js <fromDist> <toDir> <mark:<text> | timer-at-start>...\n');
    process.exit(2);
  }
  buildVariant({ fromDist, toDir, patches, logger }).then(
    (build) => process.stdout.write(`${JSON.stringify(build)}\n`),
    (err: unknown) => {
      process.stderr.write(`build-variant: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
