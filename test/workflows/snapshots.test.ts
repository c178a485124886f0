/**
 * The data that crosses builds: every continue-as-new snapshot recorded in test/histories, those of the bridge
 * release's runs (releases/0.9.0: they move onto a later build by continue-as-new) included, is read by today's readers, today's snapshots are too, and a newer build's snapshot
 * (a rollback) is read for the fields this build knows. Only a snapshot lacking what every version has is refused.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';
import {
  readFinanceSnapshot,
  readLateReportsSnapshot,
  readTransactionEventsSnapshot,
  SnapshotRejected,
  SNAPSHOT_SCHEMA_VERSIONS,
} from '../../src/workflows/snapshots';
import { FinanceApplication, resolveSettings } from '../../src/workflows/finance-application/state';
import { testPayloadCodec } from '../helpers/temporal';

const HISTORIES = join(__dirname, '..', 'histories');

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}
interface JsonEvent {
  workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string }; input?: { payloads?: JsonPayload[] } };
  workflowExecutionContinuedAsNewEventAttributes?: {
    workflowType?: { name?: string };
    input?: { payloads?: JsonPayload[] };
  };
}

/** Every workflow input in the committed histories (first events and continue-as-new commands), decoded. */
async function recordedInputs(): Promise<{ file: string; type: string; input: Record<string, unknown> }[]> {
  const out: { file: string; type: string; input: Record<string, unknown> }[] = [];
  const files = readdirSync(HISTORIES, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.json'));
  for (const file of files) {
    // The JSON as committed (base64 payloads): two recorders wrote timestamps differently, payloads alike.
    const { events } = JSON.parse(readFileSync(join(HISTORIES, file), 'utf8')) as { events: JsonEvent[] };
    for (const event of events) {
      const attrs =
        event.workflowExecutionStartedEventAttributes ?? event.workflowExecutionContinuedAsNewEventAttributes;
      const json = attrs?.input?.payloads?.[0];
      if (!attrs || !json?.data) continue;
      const payload: Payload = {
        metadata: Object.fromEntries(
          Object.entries(json.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
        ),
        data: Buffer.from(json.data, 'base64'),
      };
      const [decoded] = await testPayloadCodec.decode([payload]);
      out.push({
        file,
        type: attrs.workflowType?.name ?? '',
        input: defaultPayloadConverter.fromPayload<Record<string, unknown>>(decoded!),
      });
    }
  }
  return out;
}

const readers: Record<string, (raw: unknown) => unknown> = {
  financeApplicationWorkflow: readFinanceSnapshot,
  transactionEventsWorkflow: readTransactionEventsSnapshot,
  lateAccountEventsWorkflow: readLateReportsSnapshot,
};

describe('snapshots that cross builds', () => {
  it('reads every snapshot recorded in test/histories and its releases/ folders', async () => {
    const carried = (await recordedInputs()).filter((i) => i.input.carried !== undefined);
    const types = new Set(carried.map((c) => c.type));
    // Continue-as-new histories of the finance application and the transaction events are committed.
    expect([...types]).toEqual(expect.arrayContaining(['financeApplicationWorkflow', 'transactionEventsWorkflow']));
    expect(carried.length).toBeGreaterThanOrEqual(4);
    for (const { file, type, input } of carried) {
      const read = readers[type];
      expect([file, type, read !== undefined]).toEqual([file, type, true]);
      expect(() => read!(input.carried)).not.toThrow();
    }
  });

  it("reads today's snapshot, and writes its schema version", () => {
    const app = new FinanceApplication('order-1', resolveSettings().settings, {
      now: Date.parse('2026-11-24T00:00:00Z'),
      notifies: false,
    });
    app.created({ financeApplicationId: 'fa-1', status: 'CREATED' }, new Date('2026-11-24T00:00:01.000Z'));
    const snapshot = app.snapshot();
    expect(snapshot.schemaVersion).toBe(SNAPSHOT_SCHEMA_VERSIONS.financeApplication);
    expect(readFinanceSnapshot(JSON.parse(JSON.stringify(snapshot)))).toEqual(snapshot);
  });

  it("reads a newer build's snapshot (a rollback): what it knows, the rest carried along", () => {
    const newer = { schemaVersion: 99, pendingAccountIds: ['a'], events: 3, batches: 1, addedLater: { x: 1 } };
    expect(readTransactionEventsSnapshot(newer)).toMatchObject({ pendingAccountIds: ['a'], events: 3 });
  });

  it.each([
    ['not an object', readFinanceSnapshot, 'x', /not an object/],
    ['no state', readFinanceSnapshot, { unsentNotifications: [], pendingWebhookIds: [] }, /state is missing/],
    [
      'a bad version',
      readTransactionEventsSnapshot,
      { schemaVersion: 0, pendingAccountIds: [], events: 0, batches: 0 },
      /schemaVersion 0/,
    ],
    ['a wrong type', readLateReportsSnapshot, { reports: [], seenKeys: [1], received: 0, duplicates: 0 }, /seenKeys/],
  ])('refuses %s, naming it', (_case, read, raw, message) => {
    expect(() => read(raw)).toThrow(SnapshotRejected);
    expect(() => read(raw)).toThrow(message);
  });
});
