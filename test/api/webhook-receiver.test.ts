/**
 * The one receiver pipeline (src/api/resources/webhooks/receiver.ts), shared by both webhook routes, on the real public app
 * over real HTTP with a scripted Temporal client: the same checks and the same answers on both routes.
 */
import { Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import pino from 'pino';
import { createPublicApp } from '../../src/api/app';
import { closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { SIGNAL_DEADLINE_MS } from '../../src/api/resources/webhooks/receiver';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { consentClaimWorkflowId, lateAccountEventsWorkflowId } from '../../src/shared/ids';
import { MerchantId } from '../../src/shared/search-attributes';
import { postRaw } from '../../tools/harness/http';
import { TEST_MERCHANT, testMerchants } from '../helpers/merchants';

const HASH_SECRET = 'pipeline-test-hash-secret-0123456789';
const HEADER = 'Basic cGlwZWxpbmU6dGVzdA==';
const REF = 'order-7';

describe('receiver pipeline (both webhook routes)', () => {
  let server: Server;
  let port: number;
  /** What the scripted client does with the next Temporal call. */
  let outcome: 'accept' | 'not-found' = 'accept';
  const calls: { deadline: number; at: number }[] = [];

  const metrics = createMetrics();

  beforeAll(async () => {
    const answer = () =>
      outcome === 'accept' ? Promise.resolve() : Promise.reject(new WorkflowNotFoundError('gone', 'wf', undefined));
    // A running refresh whose PUT /refresh has not answered yet: the accountEvent is signalled to it.
    const describe = () =>
      outcome === 'accept'
        ? Promise.resolve({ status: { name: 'RUNNING' }, typedSearchAttributes: { get: () => undefined } })
        : Promise.reject(new WorkflowNotFoundError('gone', 'wf', undefined));
    // The consent's claim: c-1 is the test merchant's, whatever happens to its other workflows; nobody claimed others.
    const describeClaim = (workflowId: string) =>
      workflowId === consentClaimWorkflowId('c-1')
        ? Promise.resolve({
            status: { name: 'RUNNING' },
            typedSearchAttributes: { get: (key: unknown) => (key === MerchantId ? TEST_MERCHANT : undefined) },
          })
        : Promise.reject(new WorkflowNotFoundError('no claim', workflowId, undefined));
    const client = {
      // Signal-with-start always lands (it starts the workflow when none runs).
      workflow: {
        getHandle: (workflowId: string) =>
          workflowId.startsWith(consentClaimWorkflowId(''))
            ? { describe: () => describeClaim(workflowId) }
            : { signal: answer, describe },
        signalWithStart: () => Promise.resolve(),
      },
      withDeadline: <R>(deadline: number, fn: () => Promise<R>) => {
        calls.push({ deadline, at: Date.now() });
        return fn();
      },
    } as unknown as Client;
    const app = createPublicApp({
      client,
      taskQueue: 'unused',
      webhooks: { hashSecret: HASH_SECRET, securityHeader: HEADER },
      merchantApiKeys: [],
      merchants: testMerchants(),
      logger: pino({ level: 'silent' }),
      metrics,
      checkTemporal: () => Promise.resolve(),
    });
    server = await listen(app, 0, '127.0.0.1');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => closeServer(server, 100));

  const routes = {
    finance: {
      path: `/webhooks/finance-applications/test~${REF}/${tenantWebhookHash(HASH_SECRET, 'test', REF)}`,
      auth: {},
      body: { financeApplicationId: 'fa-1' },
    },
    account: {
      path: '/webhooks/accounts',
      auth: { authorization: HEADER },
      body: { consentId: 'c-1', taskId: 't-1', taskStatus: 'FINISHED', bankCode: 'B', bankName: 'B', accounts: [] },
    },
    transaction: {
      path: '/webhooks/accounts',
      auth: { authorization: HEADER },
      body: { consentId: 'c-1', accounts: [{ accountId: 'a-1' }] },
    },
  };
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  afterAll(() => agent.destroy());
  const send = async (path: string, headers: Record<string, string>, body: Buffer | string) => {
    const res = await postRaw({ port, path, agent, headers: { 'transfer-encoding': 'chunked', ...headers }, body });
    return { status: res.status, json: JSON.parse(res.text) as Record<string, unknown>, socket: res.socket };
  };

  it.each(Object.entries(routes))(
    '%s: accepts JSON with any parameters, UTF-8 or no charset, any of the encodings',
    async (_name, route) => {
      outcome = 'accept';
      const text = JSON.stringify(route.body);
      for (const [contentType, encoding] of [
        ['application/json', undefined],
        ['application/json; charset=utf-8', undefined],
        ['Application/JSON;Charset="UTF-8"; version=2', 'gzip'],
        ['application/vnd.bank+json', 'identity'],
      ] as const) {
        const headers: Record<string, string> = { ...route.auth, 'content-type': contentType };
        if (encoding) headers['content-encoding'] = encoding;
        const res = await send(route.path, headers, encoding === 'gzip' ? gzipSync(text) : text);
        expect({ contentType, status: res.status }).toEqual({ contentType, status: 202 });
        expect(res.json).toMatchObject({
          status: 'accepted',
          kind: expect.any(String),
          workflowId: expect.any(String),
        });
      }
    },
  );

  it.each(Object.entries(routes))(
    '%s: refuses another charset with 415 and an unreadable encoding with 415 or 400',
    async (_name, route) => {
      const text = JSON.stringify(route.body);
      for (const charset of ['latin1', 'utf-16', '"iso-8859-1"', '']) {
        const res = await send(
          route.path,
          { ...route.auth, 'content-type': `application/json; charset=${charset}` },
          text,
        );
        expect({ charset, status: res.status }).toEqual({ charset, status: 415 });
        expect(res.json).toMatchObject({ error: 'unsupported_media_type' });
      }
      expect(
        (
          await send(
            route.path,
            { ...route.auth, 'content-type': 'application/json', 'content-encoding': 'zstd' },
            text,
          )
        ).status,
      ).toBe(415);
      expect(
        (
          await send(
            route.path,
            { ...route.auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
            text,
          )
        ).status,
      ).toBe(400);
    },
  );

  it("a closed or unknown workflow: a finance webhook gets 200 ignored; a claimed consent's account webhooks are never ignored, an unclaimed one's start nothing", async () => {
    outcome = 'not-found';
    const post = (route: (typeof routes)[keyof typeof routes]) =>
      send(route.path, { ...route.auth, 'content-type': 'application/json' }, JSON.stringify(route.body));
    const late = async () =>
      (await metrics.webhooks.get()).values.find((v) => v.labels.kind === 'accountEvent' && v.labels.outcome === 'late')
        ?.value ?? 0;
    try {
      const finance = await post(routes.finance);
      expect(finance.status).toBe(200);
      expect(finance.json).toEqual({ status: 'ignored', kind: 'financeApplication', reason: expect.any(String) });
      // An accountEvent without its refresh is a late bank report, handed off by signal-with-start.
      const before = await late();
      const account = await post(routes.account);
      expect(account).toMatchObject({
        status: 202,
        json: { status: 'accepted', workflowId: lateAccountEventsWorkflowId(TEST_MERCHANT, 'c-1') },
      });
      expect(await late()).toBe(before + 1);
      expect((await post(routes.transaction)).status).toBe(202);
      // A consent no merchant claimed: 200 ignored, nothing started (nobody to deliver it to).
      for (const route of [routes.account, routes.transaction]) {
        const unclaimed = await post({ ...route, body: { ...route.body, consentId: 'c-unclaimed' } });
        expect(unclaimed).toMatchObject({ status: 200, json: { status: 'ignored' } });
      }
      expect(await late()).toBe(before + 1);
    } finally {
      outcome = 'accept';
    }
  });

  it('gives every Temporal call of both routes the same signal deadline', async () => {
    calls.length = 0;
    for (const route of Object.values(routes)) {
      await send(route.path, { ...route.auth, 'content-type': 'application/json' }, JSON.stringify(route.body));
    }
    expect(calls).toHaveLength(3);
    // The deadline is taken a moment before the call is recorded (a millisecond may tick in between).
    for (const call of calls) {
      expect(call.deadline - call.at).toBeLessThanOrEqual(SIGNAL_DEADLINE_MS);
      expect(call.deadline - call.at).toBeGreaterThan(SIGNAL_DEADLINE_MS - 100);
    }
    expect(SIGNAL_DEADLINE_MS).toBeLessThan(10_000); // answered before the bank's own timeout
  });

  it('reads an undecodable body off the socket before answering: the kept-alive connection serves the next webhook', async () => {
    const big = Buffer.from(JSON.stringify({ ...routes.account.body, pad: 'x'.repeat(200_000) }));
    const notGzip = await send(
      routes.account.path,
      { ...routes.account.auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      big,
    );
    expect(notGzip.status).toBe(400);
    const next = await send(
      routes.account.path,
      { ...routes.account.auth, 'content-type': 'application/json' },
      JSON.stringify(routes.account.body),
    );
    expect(next).toMatchObject({ status: 202, socket: notGzip.socket });
  });
});
