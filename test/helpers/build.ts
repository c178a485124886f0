import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { buildWorkflowBundle } from '../../src/worker/prebuilt-workflow-bundle';

const root = join(__dirname, '..', '..');

/**
 * Where this jest run's shared build goes: inside the project so that node_modules resolves, by its real path (webpack
 * resolves the entry through a node_modules symlink to it). test/setup/global-setup.ts names the run; the global
 * teardown removes the folder.
 */
export function sharedBuildDir(run = process.env.PAYLATER_TEST_RUN ?? `pid-${process.pid}`): string {
  const cache = join(root, 'node_modules', '.cache', 'paylater-tests');
  mkdirSync(cache, { recursive: true });
  return join(realpathSync(cache), `build-${run}`);
}

/**
 * One compiled build for the whole jest run (tsc -p tsconfig.build.json, then the plain workflow bundle, as
 * `npm run build` makes them): the first test file that asks builds it, the others wait for it, instead of each
 * compiling its own (tsc takes 25 s of CPU, over a minute on a busy 2-core machine). Test files only read it:
 * one that edits a build makes its own (test/e2e/npm-start.test.ts uses `npm run build` itself).
 */
export async function sharedBuild(): Promise<string> {
  const dir = sharedBuildDir();
  const done = join(dir, '.built');
  const failed = join(dir, '.failed');
  try {
    mkdirSync(dir); // whoever creates the folder builds; the rest wait for its mark
  } catch {
    return waitFor(dir, done, failed);
  }
  try {
    await promisify(execFile)(
      process.execPath,
      [
        join(root, 'node_modules', 'typescript-native', 'bin', 'tsc'),
        '-p',
        'tsconfig.build.json',
        '--outDir',
        dir,
        '--singleThreaded',
      ],
      { cwd: root },
    );
    await buildWorkflowBundle({ distDir: dir, logger: pino({ level: 'silent' }), tracing: false });
    writeFileSync(done, '');
    return dir;
  } catch (err) {
    const { stdout } = err as { stdout?: string };
    writeFileSync(failed, `${(err as Error).message}\n${stdout ?? ''}`);
    throw err;
  }
}

async function waitFor(dir: string, done: string, failed: string, timeoutMs = 300_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(done)) return dir;
    if (existsSync(failed)) throw new Error(`the shared build in ${dir} failed: ${readFileSync(failed, 'utf8')}`);
    if (Date.now() > deadline)
      throw new Error(`the shared build in ${dir} was not ready within ${timeoutMs / 1_000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
