/**
 * Determinism guard: every committed financeApplicationWorkflow history (recorded from real runs on the
 * whole stack with RECORD_HISTORIES=1, see test/api/finance-application*.test.ts) replays against today's
 * workflow code. A change that would break running workflows fails here; guard it with patched().
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
  it('has committed histories of both loops covering webhooks, polling, an early webhook and continue-as-new, and of the callback check', () => {
    const cases = ['webhooks', 'polling', 'early-webhook', 'continue-as-new-first-run', 'continue-as-new-last-run'];
    expect(files).toEqual(
      expect.arrayContaining([
        // Recorded before the poll policy (timer loop): runs still in flight at the deploy replay these.
        ...cases.map((c) => `finance-application-${c}.json`),
        // Recorded under the poll policy (patched: the polling activity on the bank-reads queue).
        ...cases.map((c) => `finance-application-v2-${c}.json`),
        // Recorded since a webhook's change keeps the running poll (KEEP_POLL_PATCH; test/helpers/histories.ts).
        ...cases.map((c) => `finance-application-v3-${c}.json`),
        // Recorded with the callback allow-list (patched: the checkCallbackUrl local activity before creation).
        'finance-application-v3-signed-callbacks.json',
        'finance-application-v3-callback-refused.json',
        // Recorded with duplicate applications reported (DUPLICATES_PATCH).
        'finance-application-v3-duplicate-application.json',
        // Recorded with other ids believed only once the bank confirms them (CONFIRM_DUPLICATES_PATCH): a confirmed
        // duplicate, and the first run of a flood of invented ids (404 reads, the bounded intake, continue-as-new).
        'finance-application-v3-duplicate-confirmed.json',
        'finance-application-v3-webhook-flood.json',
        // Recorded with an application the bank no longer knows (UNKNOWN_AT_BANK_PATCH).
        'finance-application-v3-unknown-at-bank.json',
        // Recorded with tracing on: its signals carry trace headers, and the webhook reads were scheduled in their
        // traces (src/workflows/interceptors.ts), which changes no command (test/telemetry/tracing.test.ts).
        'finance-application-v3-traced-webhooks.json',
        // Recorded with status waits (the long-poll's updates): timed out, answered on a change, then the end.
        'finance-application-v3-status-waits.json',
        // Recorded with the bank reads under their merchant's fairness key (an option of the command, not a command).
        'finance-application-v3-fair-bank-reads.json',
        // Recorded after the workflow became a folder of modules (src/workflows/finance-application/): same commands.
        'finance-application-v4-webhooks.json',
        // Recorded with the duplicate's confirmation read flagged in the activity's input (confirmsDuplicate): the
        // activity, not the workflow, checks the id is not another of this service's applications.
        'finance-application-v4-duplicate-confirmed.json',
        // Recorded with callbacks given up by the merchant's retry window (the activity decides, MerchantCallbackGivenUp;
        // its schedule-to-close, an option of the command, is the 7-day backstop): the same commands.
        'finance-application-v4-callback-given-up.json',
        // Recorded with the Web UI's current details and a summary on every timer (timer metadata, not a command), and a
        // callback retried after the final status (test/api/application-phase.test.ts).
        'finance-application-v4-callback-retried-details.json',
      ]),
    );
  });

  // With the production data converter: these histories were recorded before payload encryption, and their plain
  // payloads pass through the codec unchanged (a deploy of encryption keeps every open application running).
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
