import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { bundleWorkflowCode, type Logger as SdkLogger, type WorkflowBundlePath } from '@temporalio/worker';
import type { Compiler } from 'webpack';
import { StartupError } from '../entry/run-entry';
import { createLogger, type Logger } from '../telemetry/logging';
import { buildIdOf } from '../temporal/worker-deployment';

/**
 * The prebuilt workflow bundle (samples-typescript `production`): `npm run build` compiles src into dist, then
 * runs this file to bundle dist/workflows with webpack once; production workers load the result with
 * `workflowBundle: { codePath }` instead of running webpack at every start. A manifest beside it records the
 * SDK version and a hash of the bundle's inputs, which the worker recomputes at start, so a bundle older than
 * the code beside it is refused rather than run.
 */

export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';
export const WORKFLOW_BUNDLE_MANIFEST = 'workflow-bundle.json';
/** The same workflow code with the tracing interceptors, for workers with tracing on (OTEL_*). */
export const TRACING_WORKFLOW_BUNDLE_FILE = 'workflow-bundle-tracing.js';
export const TRACING_WORKFLOW_BUNDLE_MANIFEST = 'workflow-bundle-tracing.json';

/**
 * Which bundle: without or with the tracing interceptors. The interceptors are not free when tracing is off: the
 * SDK's OpenTelemetry workflow interceptors set up a tracer in every workflow they see, kept with each cached
 * workflow, several times a worker's memory (docs/benchmarks.md). So a worker without tracing runs the bundle
 * without them. Neither bundle changes a command (the interceptors add spans and an activity's trace headers only),
 * so a workflow moves between workers of either kind and replays with either.
 */
export function bundleFiles(tracing: boolean): { code: string; manifest: string } {
  return tracing
    ? { code: TRACING_WORKFLOW_BUNDLE_FILE, manifest: TRACING_WORKFLOW_BUNDLE_MANIFEST }
    : { code: WORKFLOW_BUNDLE_FILE, manifest: WORKFLOW_BUNDLE_MANIFEST };
}
/**
 * Folders of dist whose .js files are the bundle's inputs: all that workflow code may import besides
 * @temporalio/workflow (the determinism boundary of CONTRIBUTING.md; ESLint enforces it; the build refuses a bundle
 * that reaches further).
 */
export const WORKFLOW_INPUT_DIRS = ['workflows', 'shared'] as const;
/** The build output's root (dist/ when built, src/ under ts-jest): this file sits in its worker/ folder. */
const DIST_DIR = join(__dirname, '..');

/**
 * The failure converter bundled into the workflow code (src/shared/failure-converter.ts compiled), relative to dist:
 * failures raised in workflows get their message and stack encoded like the workers' and clients' (see
 * src/temporal/data-converter.ts). Inside dist/shared, so the inputs hash covers it.
 */
export const FAILURE_CONVERTER_FILE = join('shared', 'failure-converter.js');
/**
 * The workflow interceptor module (src/workflows/interceptors.ts compiled: the SDK's OpenTelemetry interceptors and
 * the webhook-read one), relative to dist: in the tracing bundle only (bundleFiles). Inside dist/workflows, so the
 * inputs hash covers it.
 */
export const WORKFLOW_INTERCEPTORS_FILE = join('workflows', 'interceptors.js');

export interface WorkflowBundleManifest {
  /** @temporalio/worker's version at bundling: Worker.create needs the very same one. */
  sdkVersion: string;
  /** SHA-256 over every .js file of dist/workflows and dist/shared (relative path and content, in path order). */
  inputsSha256: string;
  /** SHA-256 of workflow-bundle.js itself, so a bundle replaced or cut short is refused too. */
  bundleSha256: string;
  builtAt: string;
}

export interface PrebuiltWorkflowBundle {
  /** For Worker.create's `workflowBundle`. */
  workflowBundle: WorkflowBundlePath;
  manifest: WorkflowBundleManifest;
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

function jsFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return jsFiles(path);
    return entry.isFile() && entry.name.endsWith('.js') ? [path] : [];
  });
}

/** The hash of the bundle's inputs under `distDir`: the same function at build and at start. */
export function workflowInputsHash(distDir: string): string {
  const hash = createHash('sha256');
  const files = WORKFLOW_INPUT_DIRS.flatMap((dir) => jsFiles(join(distDir, dir)))
    .map((file) => ({ file, name: relative(distDir, file).split(sep).join('/') }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { file, name } of files) {
    const content = readFileSync(file);
    // Name and length first, so moving bytes between files or names changes the hash.
    hash.update(`${name}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex');
}

export function installedSdkVersion(): string {
  const path = require.resolve('@temporalio/worker/package.json');
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

/** Webpack's report goes to debug: a build prints one line, not pages of module lists. */
function bundlerLogger(logger: Logger): SdkLogger {
  const at =
    (level: 'trace' | 'debug' | 'warn' | 'error') =>
    (message: string, meta?: Record<string, unknown>): void =>
      logger[level]({ ...meta }, message);
  return {
    log: (level, message, meta) => (level === 'ERROR' ? at('error') : at('debug'))(message, meta),
    trace: at('trace'),
    debug: at('debug'),
    info: at('debug'),
    warn: at('warn'),
    error: at('error'),
  };
}

/**
 * Bundles `distDir`/workflows/index.js, with `distDir`/shared/failure-converter.js as its failure converter, into
 * `distDir`/workflow-bundle.js (with `tracing`, and the interceptor module: workflow-bundle-tracing.js) and writes
 * its manifest. Fails when the bundle reaches a file of the project outside dist/workflows and dist/shared: the
 * inputs hash would not see it.
 */
export async function buildWorkflowBundle(options: { distDir: string; logger: Logger; tracing?: boolean }): Promise<{
  codePath: string;
  manifest: WorkflowBundleManifest;
}> {
  const { distDir, logger } = options;
  const tracing = options.tracing ?? false;
  const files = bundleFiles(tracing);
  const workflowsPath = join(distDir, 'workflows', 'index.js');
  if (!existsSync(workflowsPath)) throw new Error(`${workflowsPath} not found: compile first (tsc)`);
  const failureConverterPath = join(distDir, FAILURE_CONVERTER_FILE);
  if (!existsSync(failureConverterPath)) throw new Error(`${failureConverterPath} not found: compile first (tsc)`);
  const interceptorsPath = join(distDir, WORKFLOW_INTERCEPTORS_FILE);
  if (tracing && !existsSync(interceptorsPath)) throw new Error(`${interceptorsPath} not found: compile first (tsc)`);
  const inputsBefore = workflowInputsHash(distDir);
  const resources = new Set<string>();
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    failureConverterPath,
    // The tracing bundle only (bundleFiles): a worker with tracing on gives them their sink.
    workflowInterceptorModules: tracing ? [interceptorsPath] : [],
    logger: bundlerLogger(logger),
    webpackConfigHook: (config) => ({
      ...config,
      plugins: [
        ...(config.plugins ?? []),
        {
          apply(compiler: Compiler) {
            compiler.hooks.compilation.tap('paylater-bundle-inputs', (compilation) => {
              compilation.hooks.finishModules.tap('paylater-bundle-inputs', (modules) => {
                for (const module of modules) {
                  const resource = (module as { resource?: string }).resource;
                  if (resource) resources.add(resource);
                }
              });
            });
          },
        },
      ],
    }),
  });
  const outside = [...resources].filter((file) => {
    const [first] = relative(distDir, file).split(sep);
    // Outside dist only packages (the SDK, from node_modules); inside dist only the input folders.
    if (first === '..') return !file.split(sep).includes('node_modules');
    return !(WORKFLOW_INPUT_DIRS as readonly string[]).includes(first ?? '');
  });
  if (outside.length > 0) {
    throw new Error(
      `Workflow code imports files outside dist/${WORKFLOW_INPUT_DIRS.join(' and dist/')}, which the bundle's ` +
        `inputs hash does not cover: ${outside.map((f) => relative(distDir, f)).join(', ')}`,
    );
  }
  if (workflowInputsHash(distDir) !== inputsBefore)
    throw new Error('dist/workflows or dist/shared changed while bundling');

  const codePath = join(distDir, files.code);
  const manifest: WorkflowBundleManifest = {
    sdkVersion: installedSdkVersion(),
    inputsSha256: inputsBefore,
    bundleSha256: sha256(code),
    builtAt: new Date().toISOString(),
  };
  writeFileSync(codePath, code);
  writeFileSync(join(distDir, files.manifest), `${JSON.stringify(manifest, null, 2)}\n`);
  return { codePath, manifest };
}

const REBUILD = 'Run `npm run build` (it compiles and bundles the workflow code).';

/**
 * The prebuilt bundle under `distDir` (dist, beside this file once compiled), with the tracing interceptors or
 * without (bundleFiles), checked against the code beside it: missing, unreadable, built by another SDK version, for
 * other inputs, or altered since: a StartupError.
 */
export function loadWorkflowBundle(
  distDir: string = DIST_DIR,
  options: { tracing?: boolean } = {},
): PrebuiltWorkflowBundle {
  const files = bundleFiles(options.tracing ?? false);
  const codePath = join(distDir, files.code);
  const manifestPath = join(distDir, files.manifest);
  if (!existsSync(codePath) || !existsSync(manifestPath)) {
    throw new StartupError(`No prebuilt workflow bundle at ${codePath} (with ${files.manifest}). ${REBUILD}`);
  }
  let manifest: WorkflowBundleManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as WorkflowBundleManifest;
  } catch (err) {
    throw new StartupError(
      `Unreadable workflow bundle manifest ${manifestPath}: ${(err as Error).message}. ${REBUILD}`,
    );
  }
  const sdkVersion = installedSdkVersion();
  if (manifest.sdkVersion !== sdkVersion) {
    throw new StartupError(
      `The workflow bundle ${codePath} was built with @temporalio/worker ${manifest.sdkVersion}, ` +
        `but ${sdkVersion} is installed. ${REBUILD}`,
    );
  }
  const inputs = workflowInputsHash(distDir);
  if (manifest.inputsSha256 !== inputs) {
    throw new StartupError(
      `The workflow bundle ${codePath} is stale: dist/workflows or dist/shared changed since it was built ` +
        `(inputs sha256 ${inputs.slice(0, 12)}, bundle built from ${String(manifest.inputsSha256).slice(0, 12)}). ${REBUILD}`,
    );
  }
  if (manifest.bundleSha256 !== sha256(readFileSync(codePath))) {
    throw new StartupError(`The workflow bundle ${codePath} changed after it was built. ${REBUILD}`);
  }
  return { workflowBundle: { codePath }, manifest };
}

/**
 * loadWorkflowBundle() for an entry point (with the tracing interceptors when its tracing is on), logged, with the
 * build id of its workflow code (buildIdOf the inputs hash: the same for the bundles with and without tracing, which
 * run the same commands).
 */
export function prebuiltWorkflowBundle(
  logger: Logger,
  options: { tracing: boolean; distDir?: string },
): { workflowBundle: WorkflowBundlePath; buildId: string } {
  const { workflowBundle, manifest } = loadWorkflowBundle(options.distDir, { tracing: options.tracing });
  const buildId = buildIdOf(manifest.inputsSha256);
  logger.info(
    {
      workflowBundle: workflowBundle.codePath,
      buildId,
      sdkVersion: manifest.sdkVersion,
      builtAt: manifest.builtAt,
      tracingInterceptors: options.tracing,
    },
    'workflow code from the prebuilt bundle',
  );
  return { workflowBundle, buildId };
}

/**
 * A bundle that loadWorkflowBundle accepts (same SDK, same inputs, intact) is not built again: webpack is most of a
 * build, and most changes leave the workflow code alone.
 */
function bundleIsCurrent(tracing: boolean): boolean {
  try {
    loadWorkflowBundle(DIST_DIR, { tracing });
    return true;
  } catch {
    return false;
  }
}

/** `node dist/worker/prebuilt-workflow-bundle.js`: the bundling step of `npm run build` (scripts/build.mjs). */
if (require.main === module) {
  const format =
    process.env.LOG_FORMAT === 'json' || process.env.LOG_FORMAT === 'pretty' ? process.env.LOG_FORMAT : undefined;
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'info', name: 'build', format });
  // Both bundles, one after the other (webpack is not run twice at once on a small machine).
  (async () => {
    for (const tracing of [false, true]) {
      if (bundleIsCurrent(tracing)) {
        logger.info({ tracingInterceptors: tracing }, 'workflow bundle up to date');
        continue;
      }
      const { codePath, manifest } = await buildWorkflowBundle({ distDir: DIST_DIR, logger, tracing });
      logger.info(
        {
          codePath,
          buildId: buildIdOf(manifest.inputsSha256),
          sdkVersion: manifest.sdkVersion,
          sizeKiB: Math.round(readFileSync(codePath).length / 1024),
          tracingInterceptors: tracing,
        },
        'workflow bundle built',
      );
    }
  })().then(
    () => undefined,
    (err: unknown) => {
      logger.error({ err }, 'workflow bundle failed');
      process.exitCode = 1;
    },
  );
}
