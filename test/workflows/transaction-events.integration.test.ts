import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { transactionEventsStateQuery, type TransactionsChangedEvent } from '../../src/shared/transaction-events';
import { transactionEventsWorkflowId } from '../../src/shared/ids';
import { claimTestConsent, TEST_MERCHANT } from '../helpers/merchants';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

/**
 * transactionEvents end to end: the sandbox sends 100 webhooks within a second to our receiver; the per-consent
 * workflow coalesces them into a few calls to a real local HTTP merchant endpoint; the worker is restarted in
 * the middle of the burst and nothing is lost.
 */

/**
 * A history as JSON (enum names, string longs, base64 bytes), read back by test/replay/consent-replay.test.ts with
 * History.fromObject. (The SDK's historyToJSON fails in this install: two copies of protobufjs 8.)
 */
function historyFile(history: temporal.api.history.v1.IHistory): string {
  const { History } = temporal.api.history.v1;
  const json = History.toObject(History.fromObject(history), { longs: String, enums: String, bytes: String });
  return JSON.stringify(json, null, 1) + '\n';
}

interface Received {
  idempotencyKey: string;
  /** The payload's type and data (Standard Webhooks payload, the current version). */
  type: string;
  event: Omit<TransactionsChangedEvent, 'type'>;
}

/** A merchant callback endpoint on a free port, recording every POST. */
async function startMerchant(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const payload = JSON.parse(body) as { type: string; data: Received['event'] };
      received.push({
        idempotencyKey: String(req.headers['idempotency-key']),
        type: payload.type,
        event: payload.data,
      });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/merchant/transactions`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('transactionEvents end to end (sandbox → receiver → workflow → merchant callback)', () => {
  let merchant: Awaited<ReturnType<typeof startMerchant>>;
  let stack: TestStack;
  beforeAll(async () => {
    merchant = await startMerchant();
    stack = await startTestStack({ transactionsCallbackUrl: merchant.url });
  });
  afterAll(async () => {
    await stack?.close();
    await merchant?.close();
  });

  it('100 events within a second become a handful of merchant calls covering every account, across a worker restart', async () => {
    const consentId = `burst-${randomUUID()}`;
    await claimTestConsent(stack.t, consentId); // only a claimed consent's transactionEvents reach a merchant
    const accounts = Array.from({ length: 20 }, (_, i) => `OPB-${i}`);
    // 20 accounts × 5 events each, spread at random over one second.
    const burst = Promise.all(
      accounts.map((accountId) =>
        stack.sandbox.control.emitTransactionEvents(consentId, { count: 5, accountIds: [accountId], withinMs: 1_000 }),
      ),
    );
    // Mid-burst, once the receiver has handed some events off: a graceful worker restart, as on a deploy.
    const handle = stack.t.client.workflow.getHandle(transactionEventsWorkflowId(TEST_MERCHANT, consentId));
    await eventually(async () => ((await handle.describe()).status.name === 'RUNNING' ? true : undefined), 10_000, 20);
    await stack.stopWorker();
    await stack.startWorker();
    await burst;

    // Ground truth: the bank sent 100 transactionEvents and our receiver accepted every one of them.
    const sent = () =>
      stack.sandbox.control
        .accountWebhooksSent()
        .filter((d) => d.kind === 'transactionEvent' && (d.body as { consentId?: string }).consentId === consentId);
    expect(sent()).toHaveLength(100);
    await eventually(() => (sent().every((d) => d.outcome === 'delivered') ? true : undefined));
    expect(sent().every((d) => d.attempts.at(-1)?.status === 202)).toBe(true);

    const ours = () => merchant.received.filter((r) => r.event.consentId === consentId);
    expect(merchant.received.every((r) => r.type === 'consent.transactions-changed')).toBe(true);
    const calls = await eventually(() => {
      const byKey = new Map(ours().map((r) => [r.idempotencyKey, r.event]));
      const events = [...byKey.values()].reduce((n, e) => n + e.events, 0);
      return events === 100 ? [...byKey.values()] : undefined;
    });
    const covered = new Set(calls.flatMap((e) => e.accounts.map((a) => a.accountId)));
    expect([...covered].sort()).toEqual([...accounts].sort());
    expect(calls.length).toBeGreaterThanOrEqual(1);
    expect(calls.length).toBeLessThanOrEqual(10);
    expect(calls.map((e) => e.batch).sort((a, b) => a - b)).toEqual(calls.map((_, i) => i + 1));
    expect(await handle.query(transactionEventsStateQuery)).toMatchObject({
      events: 100,
      batches: calls.length,
      pendingAccountIds: [],
    });

    if (process.env.RECORD_HISTORIES) {
      writeFileSync(
        join(__dirname, '..', 'histories', 'transaction-events-burst.json'),
        historyFile(await handle.fetchHistory()),
      );
    }
    await handle.terminate('test done');
  });
});
