/**
 * The typed client as a merchant gets it: `npm pack` of packages/client (built from src/client.ts by its prepack),
 * installed into a scratch project beside `@temporalio/client` (its peers installed by npm), type-checked with
 * strict settings and no skipLibCheck, then run: a CommonJS program against this suite's Temporal server (the
 * failures a caller sees, as docs/merchant-api.md describes them) and an ES module import. Fails when declarations, the
 * exports map or a peer break.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PACKAGE_DIR = join(__dirname, '../../packages/client');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The program a merchant would write, with the error handling docs/merchant-api.md shows. */
const PROGRAM = `
import { Client, Connection, WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import {
  FinanceApplicationFailureType,
  REFRESH_NOT_STARTED,
  financeApplicationHandle,
  getFinanceApplication,
  startFinanceApplication,
  type FinanceApplicationState,
  type StartFinanceApplicationRequest,
} from '@paylater-temporal/client';

async function main(): Promise<void> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const client = new Client({ connection, namespace: 'default' });
  const outcome: Record<string, string> = {};
  const merchantReference = 'pkg-' + Date.now();
  // The merchant the calls act for (the name of its key in MERCHANT_API_KEYS).
  const merchant = 'pkg-shop';

  // An unknown reference: WorkflowNotFoundError.
  try {
    const state: FinanceApplicationState = await getFinanceApplication(client, merchant, merchantReference);
    outcome.unknown = 'found ' + state.merchantReference;
  } catch (err) {
    outcome.unknown = err instanceof WorkflowNotFoundError ? 'WorkflowNotFoundError' : String(err);
  }

  // No worker polls this task queue: the start call runs into its deadline (the application goes on).
  const request: StartFinanceApplicationRequest = {
    merchantReference,
    application: { redirectUrl: 'https://shop.example/done' },
  };
  try {
    await client.withDeadline(Date.now() + 1_500, () =>
      startFinanceApplication(client, merchant, request, { taskQueue: 'no-worker-' + merchantReference }),
    );
    outcome.deadline = 'started';
  } catch (err) {
    outcome.deadline = err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ? 'WorkflowUpdateRPCTimeoutOrCancelledError' : String(err);
  }
  await financeApplicationHandle(client, merchant, merchantReference).terminate('package test').catch(() => undefined);

  // A reference the workflow id rules refuse, before any call.
  try {
    await startFinanceApplication(client, merchant, { ...request, merchantReference: 'no spaces' }, { taskQueue: 'x' });
  } catch (err) {
    outcome.badReference = err instanceof RangeError ? 'RangeError' : String(err);
  }
  // A merchant id the rules refuse (a ':' would blur the workflow ids of two merchants), before any call.
  try {
    await getFinanceApplication(client, 'shop:a', merchantReference);
  } catch (err) {
    outcome.badMerchant = err instanceof RangeError ? 'RangeError' : String(err);
  }
  outcome.failureTypes = [FinanceApplicationFailureType.CreateRejected, REFRESH_NOT_STARTED].join(',');
  console.log(JSON.stringify(outcome));
  await connection.close();
}
void main();
`;

describe('the typed client package (npm pack, installed in a scratch project)', () => {
  let scratch: string;
  let tarball: string;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'paylater-client-'));
    const packed = await run(NPM, ['pack', '--silent', '--pack-destination', scratch], { cwd: PACKAGE_DIR });
    tarball = join(scratch, packed.stdout.trim().split('\n').pop()!);
    writeFileSync(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'merchant-service', version: '1.0.0', private: true }),
    );
    // Peers (@temporalio/common, @temporalio/workflow) come with the package's peerDependencies; pinned to the
    // service's own versions, the versions the lockfile holds (offline-first: they are in npm's cache).
    await run(
      NPM,
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        tarball,
        '@temporalio/client@1.24.0',
        'typescript@5.9.3',
        '@types/node@20.19.43',
      ],
      { cwd: scratch },
    );
    writeFileSync(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'node16',
          moduleResolution: 'node16',
          strict: true,
          skipLibCheck: false,
          types: ['node'],
          outDir: 'out',
        },
        files: ['index.ts'],
      }),
    );
    writeFileSync(join(scratch, 'index.ts'), PROGRAM);
  }, 300_000);
  /**
   * tsc's errors, but those inside @temporalio's own declarations: with skipLibCheck off, they need @types/ms and
   * source-map, which are the SDK's business (merchants keep skipLibCheck on); ours and the program's all count.
   */
  const typeErrors = async (args: string[]): Promise<string[]> => {
    const output = await run(join(scratch, 'node_modules/.bin/tsc'), args, { cwd: scratch }).then(
      (r) => r.stdout,
      (err: Error & { stdout?: string }) => err.stdout ?? err.message,
    );
    return output
      .split('\n')
      .filter((line) => /error TS\d+/.test(line) && !line.startsWith('node_modules/@temporalio/'));
  };

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('ships declarations and the client code, not the workflows', async () => {
    const listed = await run('tar', ['-tzf', tarball]);
    const files = listed.stdout.split('\n').filter(Boolean);
    expect(files).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/dist/client.js',
        'package/dist/client.d.ts',
        'package/dist/client/finance-applications.d.ts',
        'package/dist/shared/finance-application.js',
        'package/dist/workflows/finance-application/workflow.d.ts',
      ]),
    );
    expect(files.filter((f) => /dist\/(workflows\/.*\.js|activities|api|sandbox|config)/.test(f))).toEqual([]);
    expect(readdirSync(join(scratch, 'node_modules/@temporalio'))).toEqual(
      expect.arrayContaining(['client', 'common', 'workflow']),
    );
  });

  it('type-checks a merchant program (strict, no skipLibCheck) and refuses a wrong call', async () => {
    expect(await typeErrors(['-p', '.'])).toEqual([]);
    writeFileSync(
      join(scratch, 'wrong.ts'),
      `import { startFinanceApplication } from '@paylater-temporal/client';\n` +
        `export const f = (c: never) => startFinanceApplication(c, 'shop', { merchantReference: 42, application: {} }, { taskQueue: 'q' });\n`,
    );
    const wrong = await typeErrors([
      '--noEmit',
      '--strict',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--types',
      'node',
      'wrong.ts',
    ]);
    // Both mistakes, and nothing else: a number for the reference, an application without its redirectUrl.
    expect(wrong).toEqual([
      expect.stringMatching(/^wrong\.ts.*'number' is not assignable to type 'string'/),
      expect.stringMatching(/^wrong\.ts.*'redirectUrl' is missing/),
    ]);
  }, 120_000);

  it('runs against Temporal: the failures a caller sees are the ones docs/merchant-api.md names', async () => {
    const { stdout } = await run(process.execPath, ['out/index.js'], {
      cwd: scratch,
      env: { ...process.env, TEMPORAL_ADDRESS: process.env.TEMPORAL_TEST_ADDRESS },
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({
      unknown: 'WorkflowNotFoundError',
      deadline: 'WorkflowUpdateRPCTimeoutOrCancelledError',
      badReference: 'RangeError',
      badMerchant: 'RangeError',
      failureTypes: 'FinanceApplicationCreateRejected,RefreshNotStarted',
    });
  }, 60_000);

  it('an ES module imports it by name too (the exports map)', async () => {
    writeFileSync(
      join(scratch, 'esm.mjs'),
      `import { startFinanceApplication, FINANCE_APPLICATION_DEFAULTS } from '@paylater-temporal/client';\n` +
        `console.log(typeof startFinanceApplication, FINANCE_APPLICATION_DEFAULTS.deadlineMs > 0);\n`,
    );
    const { stdout } = await run(process.execPath, ['esm.mjs'], { cwd: scratch });
    expect(stdout.trim()).toBe('function true');
    // Only what the exports map names is reachable: the package's internals are not.
    await expect(
      run(process.execPath, ['-e', "require('@paylater-temporal/client/dist/shared/ids')"], { cwd: scratch }),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('ERR_PACKAGE_PATH_NOT_EXPORTED') });
  });
});
