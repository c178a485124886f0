/**
 * The histories only the bridge release can replay (test/histories/releases/0.9.0: recorded before Worker
 * Versioning, before tenancy, or with patch markers that later builds no longer ask), replayed against 0.9.0's own
 * prebuilt workflow bundle (test/fixtures/bridge-0.9.0, built at the release's commit; docs/testing.md says why a
 * committed bundle). Each also fails on today's code, or it belongs in test/histories.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { BRIDGE_RELEASE } from '../../src/temporal/bridge-release';
import { buildIdOf } from '../../src/temporal/worker-deployment';
import { NO_TRACING_SINKS } from '../../src/telemetry/tracing';
import type { WorkflowBundleManifest } from '../../src/worker/prebuilt-workflow-bundle';
import { testDataConverter } from '../helpers/temporal';

const HISTORIES = join(__dirname, '..', 'histories', 'releases', BRIDGE_RELEASE.version);
const FIXTURE = join(__dirname, '..', 'fixtures', `bridge-${BRIDGE_RELEASE.version}`);
const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));

/** Two recorders wrote histories two ways (test/helpers/histories.ts): finance ones with historyToJSON. */
function load(file: string): temporal.api.history.v1.IHistory {
  const json = JSON.parse(readFileSync(join(HISTORIES, file), 'utf8')) as Record<string, unknown>;
  return file.startsWith('finance-application-')
    ? historyFromJSON(json)
    : temporal.api.history.v1.History.fromObject(json);
}

async function replayAll(options: ReplayWorkerOptions): Promise<Record<string, string | undefined>> {
  const errors: Record<string, string | undefined> = {};
  const histories = files.map((file) => ({ workflowId: file, history: load(file) }));
  for await (const result of Worker.runReplayHistories(options, histories))
    errors[result.workflowId] = result.error?.message;
  return errors;
}

describe(`the bridge release ${BRIDGE_RELEASE.version}`, () => {
  const manifest = JSON.parse(readFileSync(join(FIXTURE, 'workflow-bundle.json'), 'utf8')) as WorkflowBundleManifest;
  const code = gunzipSync(readFileSync(join(FIXTURE, 'workflow-bundle.js.gz'))).toString('utf8');

  it("keeps the release's bundle as built: its hash, and the build id the gate knows it by", () => {
    expect(createHash('sha256').update(code).digest('hex')).toBe(manifest.bundleSha256);
    expect(buildIdOf(manifest.inputsSha256)).toBe(BRIDGE_RELEASE.buildId);
  });

  it('has histories of every kind of run it bridges', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'finance-application-webhooks.json', // the timer loop, before the poll policy
        'finance-application-v2-polling.json', // the poll policy's patch
        'finance-application-v3-duplicate-confirmed.json', // the confirmed duplicates' patch
        'finance-application-v4-versioned-moved-first-run.json', // versioned, pinned to a build with patch markers
        'consent-refresh-five-banks.json', // the fan-in before learned banks
        'consent-refresh-v4-early-event-of-another-task.json', // late reports per merchant
        'transaction-events-v2-bounded-batches.json', // bounded batches
      ]),
    );
  });

  it('replays every one of them', async () => {
    const errors = await replayAll({
      workflowBundle: { code },
      dataConverter: testDataConverter,
      sinks: NO_TRACING_SINKS,
    });
    expect(errors).toEqual(Object.fromEntries(files.map((f) => [f, undefined])));
  });

  it("and today's code replays none of them (else a history belongs in test/histories)", async () => {
    const errors = await replayAll({
      workflowsPath: require.resolve('../../src/workflows'),
      dataConverter: testDataConverter,
      bundlerOptions: { ignoreModules: [] },
      sinks: NO_TRACING_SINKS,
    });
    expect(files.filter((f) => errors[f] === undefined)).toEqual([]);
  });
});
