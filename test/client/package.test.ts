/**
 * The typed client as a merchant gets it: `npm run client:pack` (packages/client, built from src/client.ts by its
 * prepack), installed into an empty project outside the repository beside `@temporalio/client` (its peers installed
 * by npm). There: the example of packages/client/README.md, extracted from the README so they cannot drift, runs
 * against a real stack (the suite's Temporal server, a worker, the sandbox, the facade) with no setting but the
 * stack's address and task queue, as against `npm start`; its history holds nothing in plaintext. Then a merchant
 * program is type-checked (strict) and run for the failures docs/merchant-api.md names, and an ES module imports the
 * package by name.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import { startTestStack, type TestStack } from '../helpers/stack';
import { historyPayloads } from '../helpers/history-payloads';
import { exampleUnder } from '../helpers/markdown';

const run = promisify(execFile);
const ROOT = join(__dirname, '../..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** The repository's compiler (TypeScript 7 when installed, as scripts/build-client.mjs picks it). */
const TSC = ((): string[] => {
  try {
    return [require.resolve('typescript-native/bin/tsc'), '--singleThreaded'];
  } catch {
    return [require.resolve('typescript/bin/tsc')];
  }
})();
const DEV_MERCHANT_KEY = 'dev-merchant-api-key-0123456789abcdef';

/** The program a merchant would write, with the error handling docs/merchant-api.md shows. */
const PROGRAM = `
import { Client, Connection, WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import {
  FinanceApplicationFailureType,
  REFRESH_NOT_STARTED,
  financeApplicationHandle,
  getFinanceApplication,
  paylaterClientSettings,
  paylaterDataConverter,
  startFinanceApplication,
  type FinanceApplicationState,
  type StartFinanceApplicationRequest,
} from '@paylater-temporal/client';

async function main(): Promise<void> {
  const settings = paylaterClientSettings();
  const connection = await Connection.connect({ address: settings.address });
  const client = new Client({ connection, namespace: settings.namespace, dataConverter: paylaterDataConverter(settings.payloadKeys) });
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
  // Keys are required towards anything but this machine.
  try {
    paylaterClientSettings({ TEMPORAL_ADDRESS: 'temporal.example:7233' });
  } catch (err) {
    outcome.remoteWithoutKeys = (err as Error).name;
  }
  outcome.failureTypes = [FinanceApplicationFailureType.CreateRejected, REFRESH_NOT_STARTED].join(',');
  console.log(JSON.stringify(outcome));
  await connection.close();
}
void main();
`;

describe('the typed client package (npm run client:pack, installed in an empty project)', () => {
  let scratch: string;
  let tarball: string;
  let stack: TestStack;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'paylater-client-'));
    writeFileSync(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'merchant-service', version: '1.0.0', private: true }),
    );
    const packAndInstall = async () => {
      const packed = await run(NPM, ['run', '--silent', 'client:pack', '--', '--pack-destination', scratch], {
        cwd: ROOT,
      });
      tarball = join(scratch, packed.stdout.trim().split('\n').pop()!);
      // The peers the package does not list come with its peerDependencies; @temporalio/client pinned to the
      // service's version (offline-first: the lockfile's versions are in npm's cache).
      await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, '@temporalio/client@1.24.0'], {
        cwd: scratch,
      });
    };
    // The stack as `npm start` runs it, as far as the client can tell: the public development payload key and the
    // merchant `dev`; its own address and task queue are the two settings the example is given.
    [, stack] = await Promise.all([
      packAndInstall(),
      startTestStack({
        payloadEncryptionKeys: parsePayloadEncryptionKeys(DEVELOPMENT_PAYLOAD_ENCRYPTION_KEYS),
        merchantApiKeys: [{ name: 'dev', key: DEV_MERCHANT_KEY }],
      }),
    ]);
    writeFileSync(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          skipLibCheck: true,
          types: ['node'],
          // @types/node from the repository: the scratch project installs only the package and its peers.
          typeRoots: [join(ROOT, 'node_modules/@types')],
          outDir: 'out',
        },
        files: ['index.ts', 'paylater.mts', 'wrong.ts'],
      }),
    );
    writeFileSync(join(scratch, 'index.ts'), PROGRAM);
    writeFileSync(
      join(scratch, 'paylater.mts'),
      exampleUnder(readFileSync(join(ROOT, 'packages/client/README.md'), 'utf8'), 'Example'),
    );
  }, 180_000);

  afterAll(async () => {
    await stack?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const typeErrors = async (args: string[]): Promise<string[]> => {
    const output = await run(process.execPath, [...TSC, ...args], { cwd: scratch }).then(
      (r) => r.stdout,
      (err: Error & { stdout?: string }) => err.stdout ?? err.message,
    );
    return output.split('\n').filter((line) => /error TS\d+/.test(line));
  };

  it('ships declarations, the client code and the payload codec, not the workflows or the service', async () => {
    const listed = await run('tar', ['-tzf', tarball]);
    const files = listed.stdout.split('\n').filter(Boolean);
    expect(files).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/LICENSE',
        'package/README.md',
        'package/dist/client.js',
        'package/dist/client.d.ts',
        'package/dist/client/connect.js',
        'package/dist/client/finance-applications.d.ts',
        'package/dist/security/payload-codec.js',
        'package/dist/temporal/data-converter.js',
        'package/dist/shared/failure-converter.js',
        'package/dist/shared/finance-application.js',
        'package/dist/workflows/finance-application/workflow.d.ts',
      ]),
    );
    expect(files.filter((f) => /dist\/(workflows|activities|api|sandbox|config|worker)\/.*\.js$/.test(f))).toEqual([]);
    expect(readdirSync(join(scratch, 'node_modules/@temporalio'))).toEqual(
      expect.arrayContaining(['client', 'common', 'proto', 'workflow']),
    );
  });

  it("runs the README's example against the stack with no setting: encrypted in the history, read back, the facade's merchant", async () => {
    const { stdout, stderr } = await run(process.execPath, ['paylater.mts'], {
      cwd: scratch,
      // Only where the stack is: no PAYLOAD_ENCRYPTION_KEYS, no merchant settings.
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        TEMPORAL_ADDRESS: stack.t.address,
        TASK_QUEUE: stack.t.taskQueue,
      },
    });
    expect(stderr).toContain('PAYLATER_DEVELOPMENT_KEY');
    const created = /^created (finance-application:dev:(order-\d+)) (\S+)$/m.exec(stdout);
    expect(created).not.toBeNull();
    const [, workflowId, reference, financeApplicationId] = created!;
    // The sandbox moved it on, and the client decoded the worker's encrypted answer.
    expect(stdout).toMatch(/^changed \S+ CREATED > \S+/m);

    // Every payload of the history is encrypted: the input the client sent, the update's argument and answer, the
    // summaries, every activity's. Search attributes (the reference) stay readable by design, and the SDK's own
    // bookkeeping goes past codecs: markers (patch ids, a local activity's attempt and times) and headers.
    const history = await stack.t.client.workflow.getHandle(workflowId!).fetchHistory();
    const payloads = historyPayloads(history);
    expect(payloads.filter((p) => p.encoding === 'binary/encrypted').length).toBeGreaterThan(5);
    expect(payloads.find((p) => /workflowExecutionStartedEventAttributes\.input/.test(p.path))).toMatchObject({
      encoding: 'binary/encrypted',
    });
    // The server's own note on an activity cancelled before it started is written by the server, past every codec.
    const sdkBookkeeping = /markerRecordedEventAttributes\.details\.|\.header\.fields\./;
    const serverNote = (p: { path: string; plain?: string }) =>
      /activityTaskCanceledEventAttributes\.details\./.test(p.path) && p.plain === '"ACTIVITY_ID_NOT_STARTED"';
    expect(
      payloads.filter((p) => p.encoding !== 'binary/encrypted' && !sdkBookkeeping.test(p.path) && !serverNote(p)),
    ).toEqual([]);
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
    for (const plaintext of ['shop.example', '129.9', 'redirectUrl', 'EUR']) {
      expect(bytes.includes(plaintext)).toBe(false);
    }

    // The same application is the facade's merchant `dev`'s (one identity, the same workflow ids).
    const res = await stack.facade(`/applications/${reference}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ merchantReference: reference, financeApplicationId });
  }, 60_000);

  it('type-checks the example and a merchant program (strict) and refuses a wrong call', async () => {
    // One compilation (tsc emits despite errors): the example and the program clean, wrong.ts's two mistakes only.
    writeFileSync(
      join(scratch, 'wrong.ts'),
      `import { startFinanceApplication } from '@paylater-temporal/client';\n` +
        `export const f = (c: never) => startFinanceApplication(c, 'shop', { merchantReference: 42, application: {} }, { taskQueue: 'q' });\n`,
    );
    // Both mistakes, and nothing else: a number for the reference, an application without its redirectUrl.
    expect(await typeErrors(['-p', '.'])).toEqual([
      expect.stringMatching(/^wrong\.ts.*'number' is not assignable to type 'string'/),
      expect.stringMatching(/^wrong\.ts.*'redirectUrl' is missing/),
    ]);
  }, 60_000);

  it('runs against Temporal: the failures a caller sees are the ones docs/merchant-api.md names', async () => {
    const { stdout } = await run(process.execPath, ['out/index.js'], {
      cwd: scratch,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TEMPORAL_ADDRESS: stack.t.address },
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({
      unknown: 'WorkflowNotFoundError',
      deadline: 'WorkflowUpdateRPCTimeoutOrCancelledError',
      badReference: 'RangeError',
      badMerchant: 'RangeError',
      remoteWithoutKeys: 'PaylaterClientConfigError',
      failureTypes: 'FinanceApplicationCreateRejected,RefreshNotStarted',
    });
  }, 60_000);

  it('an ES module imports it by name too (the exports map)', async () => {
    writeFileSync(
      join(scratch, 'esm.mjs'),
      `import { connectPaylater, FINANCE_APPLICATION_DEFAULTS } from '@paylater-temporal/client';\n` +
        `console.log(typeof connectPaylater, FINANCE_APPLICATION_DEFAULTS.deadlineMs > 0);\n`,
    );
    const { stdout } = await run(process.execPath, ['esm.mjs'], { cwd: scratch });
    expect(stdout.trim()).toBe('function true');
    // Only what the exports map names is reachable: the package's internals are not.
    await expect(
      run(process.execPath, ['-e', "require('@paylater-temporal/client/dist/shared/ids')"], { cwd: scratch }),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('ERR_PACKAGE_PATH_NOT_EXPORTED') });
  });
});
