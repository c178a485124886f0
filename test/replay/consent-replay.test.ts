import { NO_TRACING_SINKS, WORKFLOW_TRACING_INTERCEPTOR_MODULE } from '../../src/telemetry/tracing';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { testDataConverter } from '../helpers/temporal';

/**
 * Every committed history of consentRefreshWorkflow, lateAccountEventsWorkflow, transactionEventsWorkflow and the
 * other consent-side and merchant workflows in test/histories (recorded from real runs: RECORD_HISTORIES=1 npx jest
 * test/workflows/consent-refresh* test/workflows/*integration*) replays against today's workflow code. Those only the
 * bridge release can replay are in releases/0.9.0 (bridge-release-replay.test.ts).
 */
const dir = join(__dirname, '..', 'histories');
const files = readdirSync(dir).filter((f) =>
  /^(consent|transaction|callback-redelivery|callback-ledger|callback-bulk-resend|merchant-secrets)-.*\.json$/.test(f),
);

function load(file: string): temporal.api.history.v1.IHistory {
  const { History } = temporal.api.history.v1;
  return History.fromObject(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>);
}

describe('replay of committed consent-refresh and transaction-events histories', () => {
  it('has histories of every workflow, and of the refresh of 1.0.0 (`v5-`) in every way it ends', () => {
    expect(files.some((f) => f.startsWith('transaction-'))).toBe(true);
    expect(files.some((f) => f.startsWith('consent-late-reports-'))).toBe(true);
    // Learned banks, the quiet period restarted after an outage, events handed to the merchant's late workflow.
    for (const name of [
      'five-banks',
      'stale-event',
      'timeout',
      'before-late-reports',
      'learned-banks',
      'learned-bank-missing',
      'quiet-period-after-outage',
      'early-event-of-another-task',
    ])
      expect(files).toContain(`consent-refresh-v5-${name}.json`);
    // A backlog delivered in batches of at most 1,000 accounts, then continue-as-new.
    expect(files).toContain('transaction-events-v5-bounded-batches.json');
    // A consent's claim: released by its owner; assigned by an operator, a refused claim recorded, then released.
    expect(files).toContain('consent-claim-released.json');
    expect(files).toContain('consent-claim-v2-assigned-conflict-released.json');
    // The console's resend of a callback (callbackRedeliveryWorkflow), recorded by test/api/console.test.ts.
    expect(files).toContain('callback-redelivery-delivered.json');
    // A merchant's undelivered-callback ledger and a bulk resend of its given-up callbacks, recorded by
    // test/api/undelivered-callbacks.test.ts.
    expect(files).toContain('callback-ledger-given-up-resent.json');
    expect(files).toContain('callback-bulk-resend-delivered.json');
    // A merchant's callback signing secret rotations (merchantSecretsWorkflow), recorded by test/api/callback-signing-secret.test.ts.
    expect(files).toContain('merchant-secrets-rotated.json');
  });

  // Through the encrypting data converter: recorded before encryption, their plain payloads pass through the codec.
  // With and without the tracing interceptors, as production runs either bundle (src/worker/prebuilt-workflow-bundle.ts).
  it.each([
    ['with', [WORKFLOW_TRACING_INTERCEPTOR_MODULE]],
    ['without', []],
  ])(
    'replays every one without nondeterminism, %s the tracing interceptors, through the encrypting data converter',
    async (_with, workflowModules) => {
      const histories = files.map((file) => ({ workflowId: file, history: load(file) }));
      const results = Worker.runReplayHistories(
        {
          workflowsPath: require.resolve('../../src/workflows'),
          dataConverter: testDataConverter,
          interceptors: { workflowModules },
          sinks: NO_TRACING_SINKS,
        },
        histories,
      );
      const failures: string[] = [];
      let replayed = 0;
      for await (const result of results) {
        replayed++;
        if (result.error) failures.push(`${result.workflowId}: ${String(result.error)}`);
      }
      expect(failures).toEqual([]);
      expect(replayed).toBe(files.length);
    },
  );
});
