/**
 * Temporal unreachable from the receiver: the bank gets 503 and retries; once Temporal is back the retry is
 * accepted and nothing is lost. A local equivalent of the test stack (the stack's webhookUrl points at its own
 * app): the suite's dev server and worker, the bank sandbox over HTTP, real activities whose webhookUrl points at
 * a second app whose Temporal client goes through a TCP proxy this test can cut.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { createActivities, createBankClient, type BankClientHandle } from '../../src/activities';
import { createInternalApp, createPublicApp } from '../../src/api/app';
import { makeDeadlineBoundRetryInterceptor } from '../../src/temporal/grpc-retry';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics, type Metrics } from '../../src/api/metrics';
import {
  awaitFinanceApplication,
  getFinanceApplication,
  startFinanceApplication,
} from '../../src/client/finance-applications';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { checkTemporal } from '../../src/temporal/connection';
import { connectTestTemporal, eventually, withWorker, type TemporalTestContext } from '../helpers/temporal';
import { TEST_MERCHANT, testMerchants } from '../helpers/merchants';

/** A TCP proxy to the dev server that can be cut (refusing and dropping connections) and restored on the same port. */
async function cuttableProxy(target: string) {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  let server: NetServer | undefined;
  let listenPort = 0;
  const up = () =>
    new Promise<void>((resolve) => {
      server = createServer((inbound) => {
        const outbound = connect(port, host);
        for (const s of [inbound, outbound]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        inbound.pipe(outbound).pipe(inbound);
      });
      server.listen(listenPort, '127.0.0.1', () => {
        listenPort = (server!.address() as { port: number }).port;
        resolve();
      });
    });
  const down = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });
  await up();
  return { address: () => `127.0.0.1:${listenPort}`, up, down };
}

describe('finance-application receiver while Temporal is unreachable', () => {
  let t: TemporalTestContext;
  let sandbox: RunningSandbox;
  let bank: BankClientHandle;
  let proxy: Awaited<ReturnType<typeof cuttableProxy>>;
  let proxiedConnection: Connection;
  let server: Server;
  let internalServer: Server;
  let apiUrl: string;
  let internalUrl: string;
  let metrics: Metrics;
  const hashSecret = 'outage-test-hash-secret';
  const OPERATOR_KEY = 'outage-operator-key-0123456789abcdef';

  beforeAll(async () => {
    t = await connectTestTemporal();
    proxy = await cuttableProxy(t.address);
    // The API's retry interceptor (src/temporal/connection.ts): with the SDK's own, a retry still in backoff when
    // afterAll closes this connection throws "Channel has been shut down" from its timer, into whichever test file
    // this jest worker runs next.
    proxiedConnection = Connection.lazy({
      address: proxy.address(),
      interceptors: [makeDeadlineBoundRetryInterceptor()],
    });
    metrics = createMetrics();
    const deps = {
      client: new Client({ connection: proxiedConnection, namespace: t.namespace, dataConverter: t.dataConverter }),
      taskQueue: t.taskQueue,
      webhooks: { publicBaseUrl: '', hashSecret, securityHeader: '' },
      merchantApiKeys: [],
      operatorApiKeys: [{ name: 'ops', key: OPERATOR_KEY }],
      merchants: testMerchants(),
      logger: pino({ level: 'silent' }),
      metrics,
      checkTemporal: () => checkTemporal(proxiedConnection, t.namespace),
    };
    server = await listen(createPublicApp(deps), 0, '127.0.0.1');
    apiUrl = `http://127.0.0.1:${boundPort(server)}`;
    internalServer = await listen(createInternalApp(deps), 0, '127.0.0.1');
    internalUrl = `http://127.0.0.1:${boundPort(internalServer)}`;
    sandbox = await startSandbox({
      clientId: 'outage-client',
      clientSecret: 'outage-secret',
      // Enough patient retries to outlast the outage below.
      webhookRetry: { attempts: 30, initialDelayMs: 200, maxDelayMs: 1_000, timeoutMs: 8_000 },
    });
    bank = createBankClient({
      authUrl: sandbox.url,
      baseUrl: sandbox.url,
      clientId: 'outage-client',
      clientSecret: 'outage-secret',
    });
  });
  afterAll(async () => {
    await closeServer(server, 1_000);
    await closeServer(internalServer, 1_000);
    await proxiedConnection?.close();
    await sandbox?.close();
    await bank?.close();
    await t?.close();
  });

  it('answers 503 while Temporal is down; the bank retry after it is back is accepted and nothing is lost', async () => {
    const activities = createActivities({ bank: bank.client, webhooks: { publicBaseUrl: apiUrl, hashSecret } });
    const ref = `outage-${randomUUID()}`;
    sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    await withWorker(
      {
        connection: t.nativeConnection,
        taskQueue: t.taskQueue,
        workflowsPath: require.resolve('../../src/workflows'),
        activities,
      },
      async () => {
        const { financeApplicationId: id } = await startFinanceApplication(
          t.client,
          TEST_MERCHANT,
          {
            merchantReference: ref,
            application: { redirectUrl: 'https://shop.example/done' },
            settings: { fastPollIntervalMs: 3_600_000, slowPollIntervalMs: 3_600_000 },
          },
          { taskQueue: t.taskQueue },
        );

        await proxy.down();
        sandbox.control.setApplicationStatus(id, 'APPROVED');
        // The webhookUrl the bank was given (the application's key and hash), as the bank itself would call it.
        const direct = await fetch(sandbox.control.application(id)!.createRequest.webhookUrl!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ financeApplicationId: id }),
        });
        expect(direct.status).toBe(503);
        expect(direct.headers.get('retry-after')).toBeTruthy();
        expect(await direct.json()).toMatchObject({ error: 'unavailable' });
        // Every receiver, and readiness, say 503 the same way while Temporal is unreachable.
        for (const body of [
          { consentId: 'c-outage', taskId: 't-1', taskStatus: 'FINISHED', bankCode: 'B1', bankName: 'B', accounts: [] },
          { consentId: 'c-outage', accounts: [{ accountId: 'a-1' }] },
        ]) {
          const account = await fetch(`${apiUrl}/webhooks/accounts`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          expect([account.status, account.headers.get('retry-after') !== null]).toEqual([503, true]);
          await account.arrayBuffer();
        }
        // A probe reads the status alone; Temporal's error text is an operator's (it names addresses and causes).
        const ready = await fetch(`${internalUrl}/readyz`);
        expect(ready.status).toBe(503);
        expect(await ready.json()).toEqual({ status: 'not_ready' });
        const detailed = await fetch(`${internalUrl}/readyz`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
        expect(detailed.status).toBe(503);
        expect(await detailed.json()).toEqual({
          status: 'not_ready',
          temporal: 'unreachable',
          message: expect.stringMatching(/\S/),
        });
        // The bank's own delivery got a 503 too (and keeps retrying).
        await eventually(() =>
          sandbox.control.application(id)!.webhooks[0]?.attempts.some((a) => a.status === 503) ? true : undefined,
        );

        await proxy.up();
        const delivery = await eventually(() => {
          const w = sandbox.control.application(id)!.webhooks[0]!;
          return w.outcome === 'delivered' ? w : undefined;
        });
        expect(delivery.attempts[delivery.attempts.length - 1]!.status).toBe(202);
        const approved = await eventually(async () => {
          const s = await getFinanceApplication(t.client, TEST_MERCHANT, ref);
          return s.status === 'APPROVED' ? s : undefined;
        });
        expect(approved.history.map((h) => [h.status, h.source])).toEqual([
          ['CREATED', 'create'],
          ['APPROVED', 'webhook'],
        ]);
        expect(approved.webhooksReceived).toBe(1);

        sandbox.control.setApplicationStatus(id, 'COMPLETED');
        const final = await awaitFinanceApplication(t.client, TEST_MERCHANT, ref);
        expect(final.history.map((h) => h.status)).toEqual(
          sandbox.control.application(id)!.statusHistory.map((s) => s.status),
        );
        const metricsText = await metrics.registry.metrics();
        expect(metricsText).toMatch(
          /paylater_bank_webhooks_total\{kind="financeApplication",outcome="unavailable"\} [1-9]/,
        );
      },
    );
  });
});
