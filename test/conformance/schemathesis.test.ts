/**
 * The external conformance run (`npm run test:conformance`, its own step in .ci/run): Schemathesis, a property-based
 * API tester from PyPI (scripts/python-tools.sh installs it into .venv-tools/), reads the OpenAPI document the
 * running stack serves at /openapi.json and sends generated requests, valid and invalid, to every merchant route with
 * the merchant's key: each answer must be one the document describes for that route (status, content type, headers,
 * body schema), invalid input must be refused, no answer may be a 500, and a route must refuse a request without the
 * key. The stack is the in-process one of the other whole-stack tests (tools/harness/in-process-stack.ts): a real
 * Temporal dev server, the bank sandbox over HTTP, a worker and both listeners.
 *
 * Bounded (CONFORMANCE_MAX_EXAMPLES per operation, 25 unless set; a fixed seed) so the step takes a few minutes.
 * Not checked: positive_data_acceptance, since some refusals of valid-looking input depend on rules no JSON Schema
 * holds (callbackUrl's origin allow-list, the merchant's poll floor, the poll intervals' order); each such refusal is
 * still checked to be a described 400. The reports (CONFORMANCE_REPORTS, default junit; ndjson lists every request)
 * are kept under CONFORMANCE_REPORT_DIR (default .conformance-report/).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestStack, type TestStack } from '../../tools/harness/in-process-stack';

const ROOT = join(__dirname, '../..');
const SCHEMATHESIS = join(ROOT, '.venv-tools/bin/schemathesis');
const MAX_EXAMPLES = process.env.CONFORMANCE_MAX_EXAMPLES ?? '25';
const REPORT_DIR = process.env.CONFORMANCE_REPORT_DIR ?? join(ROOT, '.conformance-report');

/** The merchant facade's operations (the document's tags): the webhooks, probes and the codec are not a merchant's. */
const MERCHANT_TAGS = ['Finance applications', 'Consent refresh'];

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { env, maxBuffer: 64 * 1024 * 1024, timeout: 8 * 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** Each line behind a marker, so none of Schemathesis's lines stands alone in the log. */
function indented(output: string): string {
  return output
    .split('\n')
    .map((line) => `  schemathesis | ${line}`)
    .join('\n');
}

describe('Schemathesis against the running stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    if (!existsSync(SCHEMATHESIS)) throw new Error(`${SCHEMATHESIS} is missing: run scripts/python-tools.sh`);
    stack = await startTestStack();
  });
  afterAll(() => stack?.close());

  it('every merchant route answers as its OpenAPI document says', async () => {
    mkdirSync(REPORT_DIR, { recursive: true });
    const args = [
      'run',
      `${stack.internalUrl}/openapi.json`,
      '--header',
      `Authorization: Bearer ${stack.apiKey}`,
      ...MERCHANT_TAGS.flatMap((tag) => ['--include-tag', tag]),
      '--checks',
      'all',
      '--exclude-checks',
      'positive_data_acceptance',
      '--phases',
      'examples,coverage,fuzzing',
      '--max-examples',
      MAX_EXAMPLES,
      '--seed',
      '20261125',
      // One worker: with two threads, CPython 3.11's ast module fails now and then ("SystemError: AST constructor
      // recursion depth mismatch", python/cpython#106905) when Hypothesis reads its strategies' lambda sources.
      '--workers',
      '1',
      '--request-timeout',
      '60',
      '--suppress-health-check',
      'all',
      '--report',
      process.env.CONFORMANCE_REPORTS ?? 'junit',
      '--report-dir',
      REPORT_DIR,
    ];
    // Its own environment: PATH and HOME only, no colour codes in the output kept by jest.
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NO_COLOR: '1', SCHEMATHESIS_HOOKS: '' };
    const { code, output } = await run(SCHEMATHESIS, args, env);
    // Kept whole beside the reports, and shown indented: Schemathesis closes with a pytest-style line
    // ("=== 1 warning in 12.45s ===") that CI's log readers would take for a test run that ran no test.
    writeFileSync(join(REPORT_DIR, 'schemathesis-output.txt'), output);
    process.stdout.write(`${indented(output)}\n`);
    expect({ code, failures: code === 0 ? '' : output.slice(-8_000) }).toEqual({ code: 0, failures: '' });
  });
});
