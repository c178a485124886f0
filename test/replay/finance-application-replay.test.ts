/**
 * Determinism guard: every committed financeApplicationWorkflow history of test/histories (recorded from real runs on
 * the whole stack with RECORD_HISTORIES=1, see test/api/finance-application*.test.ts) replays against today's
 * workflow code. Those only the bridge release can replay are in releases/0.9.0 (bridge-release-replay.test.ts).
 */
import { NO_TRACING_SINKS, WORKFLOW_TRACING_INTERCEPTOR_MODULE } from '../../src/telemetry/tracing';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker, type ReplayResult } from '@temporalio/worker';
import { testDataConverter } from '../helpers/temporal';

const HISTORIES = join(__dirname, '..', 'histories');
const files = readdirSync(HISTORIES).filter((f) => /^finance-application-.*\.json$/.test(f));

describe('financeApplicationWorkflow replay', () => {
  it('has committed histories of 1.0.0 (`v5-`) covering webhooks, polling, an early webhook, continue-as-new and versioning', () => {
    expect(files).toEqual(
      expect.arrayContaining(
        [
          'webhooks',
          'polling',
          'early-webhook',
          'continue-as-new-first-run',
          'continue-as-new-last-run',
          // The callback allow-list: signed callbacks, and a URL refused before creation.
          'signed-callbacks',
          'callback-refused',
          // Another id believed only once the bank confirms it.
          'duplicate-confirmed',
          // An application the bank no longer knows.
          'unknown-at-bank',
          // Moved to a new build at its safe point (test/workflows/worker-versioning.test.ts).
          'versioned-moved-first-run',
          'versioned-moved-last-run',
        ].map((c) => `finance-application-v5-${c}.json`),
      ),
    );
  });

  // With the production data converter, as the workers decode them.
  // Production runs the bundle with the tracing interceptors when tracing is on and without them otherwise
  // (src/worker/prebuilt-workflow-bundle.ts bundleFiles): every history replays with either.
  it.each([
    ['with', [WORKFLOW_TRACING_INTERCEPTOR_MODULE]],
    ['without', []],
  ])(
    'replays every committed history without nondeterminism, %s the tracing interceptors, through the encrypting data converter',
    async (_with, workflowModules) => {
      const histories = files.map((file) => ({
        workflowId: file,
        history: historyFromJSON(JSON.parse(readFileSync(join(HISTORIES, file), 'utf8'))),
      }));
      const results: ReplayResult[] = [];
      for await (const result of Worker.runReplayHistories(
        {
          workflowsPath: require.resolve('../../src/workflows'),
          dataConverter: testDataConverter,
          bundlerOptions: { ignoreModules: [] },
          interceptors: { workflowModules },
          sinks: NO_TRACING_SINKS,
        },
        histories,
      )) {
        results.push(result);
      }
      expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(files.map((f) => [f, undefined]));
    },
  );
});
