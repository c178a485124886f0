/**
 * The public app's answers to the bank's webhooks, through Express (src/api/app.ts createPublicApp), over HTTP with a
 * scripted Temporal client: for each kind of webhook and each way it can fail, the status, headers, body, log lines
 * and request metric; and the same answer for any spelling of the path Express routes (another letter case).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import pino from 'pino';
import { createPublicApp } from '../../src/api/app';
import { closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import {
  consentRefreshWorkflowId,
  financeApplicationWorkflowId,
  transactionEventsWorkflowId,
} from '../../src/shared/ids';
import { MerchantId } from '../../src/shared/search-attributes';
import { postRaw } from '../../tools/harness/http';
import { TEST_MERCHANT, testMerchants } from '../helpers/merchants';

const FINANCE = '/webhooks/finance-applications/:ref/:hash';
const HASH_SECRET = 'webhook-answers-test-hash-secret-0123';
const SECURITY_HEADER = 'Bearer bank-webhook-header';
const REF = `${TEST_MERCHANT}~order-42`;
const HASH = tenantWebhookHash(HASH_SECRET, TEST_MERCHANT, 'order-42');

describe('the public app: webhook answers through Express', () => {
  const metrics = createMetrics();
  const lines: Record<string, unknown>[] = [];
  const signalled: string[] = [];
  let server: Server;
  let port: number;
  let outcome: 'accept' | 'not-found' = 'accept';

  beforeAll(async () => {
    const answer = (id: string) => () => {
      if (outcome === 'not-found') return Promise.reject(new WorkflowNotFoundError('gone', id, undefined));
      signalled.push(id);
      return Promise.resolve();
    };
    const client = {
      workflow: {
        getHandle: (id: string) => ({
          signal: answer(id),
          // A running refresh whose task is not known yet, and a consent claimed by TEST_MERCHANT.
          describe: () =>
            Promise.resolve({
              status: { name: 'RUNNING' },
              typedSearchAttributes: { get: (key: unknown) => (key === MerchantId ? TEST_MERCHANT : undefined) },
            }),
        }),
        signalWithStart: (_type: string, options: { workflowId: string }) => answer(options.workflowId)(),
      },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    } as unknown as Client;
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    server = await listen(
      createPublicApp({
        client,
        taskQueue: 'unused',
        webhooks: { hashSecret: HASH_SECRET, securityHeader: SECURITY_HEADER },
        merchantApiKeys: [],
        merchants: testMerchants(),
        logger: pino({ level: 'debug' }, sink),
        metrics,
        checkTemporal: () => Promise.resolve(),
      }),
      0,
      '127.0.0.1',
    );
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => closeServer(server, 100));
  beforeEach(() => {
    lines.length = 0;
    signalled.length = 0;
    outcome = 'accept';
  });

  const send = async (path: string, headers: Record<string, string>, body: string) => {
    const { status, headers: answered, text } = await postRaw({ port, path, headers, body });
    const { date: _date, 'x-request-id': requestId, ...rest } = answered;
    expect(typeof requestId).toBe('string');
    return { status, headers: rest, body: JSON.parse(text) as Record<string, unknown> };
  };

  const json = { 'content-type': 'application/json' };
  const auth = { ...json, authorization: SECURITY_HEADER };
  const finance = JSON.stringify({ financeApplicationId: 'fa-1' });
  const accountEvent = JSON.stringify({
    consentId: 'consent-1',
    taskId: 'task-1',
    taskStatus: 'DONE',
    bankCode: 'BANK1',
    bankName: 'Bank One',
    accounts: [{ accountId: 'acc-1', eventType: 'NEW' }],
  });
  const transactionEvent = JSON.stringify({ consentId: 'consent-1', accounts: [{ accountId: 'acc-1' }] });
  const financeId = financeApplicationWorkflowId(TEST_MERCHANT, 'order-42');

  type Case = [
    what: string,
    path: string,
    headers: Record<string, string>,
    body: string,
    then: 'accept' | 'not-found',
    status: number,
    answer: Record<string, unknown>,
  ];
  const F = '/webhooks/finance-applications';
  const cases: Case[] = [
    [
      'finance: accepted',
      `${F}/${REF}/${HASH}`,
      json,
      finance,
      'accept',
      202,
      { status: 'accepted', kind: 'financeApplication', workflowId: financeId },
    ],
    [
      'finance: accepted, hash in the query',
      `${F}/${REF}?hash=${HASH}`,
      json,
      finance,
      'accept',
      202,
      { status: 'accepted', kind: 'financeApplication', workflowId: financeId },
    ],
    [
      'finance: ignored, no workflow',
      `${F}/${REF}/${HASH}`,
      json,
      finance,
      'not-found',
      200,
      { status: 'ignored', kind: 'financeApplication', reason: 'no running workflow for this reference' },
    ],
    [
      'finance: wrong hash',
      `${F}/${REF}/${'x'.repeat(43)}`,
      json,
      finance,
      'accept',
      401,
      { error: 'unauthorized', message: 'Missing or wrong webhook hash' },
    ],
    ['finance: not JSON', `${F}/${REF}/${HASH}`, { 'content-type': 'text/plain' }, finance, 'accept', 415, {}],
    ['finance: malformed JSON', `${F}/${REF}/${HASH}`, json, '{"financeApplicationId":', 'accept', 400, {}],
    [
      'finance: wrong shape',
      `${F}/${REF}/${HASH}`,
      json,
      '{"financeApplicationId":""}',
      'accept',
      400,
      { error: 'bad_request', message: 'Malformed finance-application webhook body' },
    ],
    [
      'finance: too large',
      `${F}/${REF}/${HASH}`,
      json,
      JSON.stringify({ financeApplicationId: 'x'.repeat(20_000) }),
      'accept',
      413,
      { error: 'payload_too_large' },
    ],
    [
      'accountEvent: accepted',
      '/webhooks/accounts',
      auth,
      accountEvent,
      'accept',
      202,
      { status: 'accepted', kind: 'accountEvent', workflowId: consentRefreshWorkflowId('consent-1') },
    ],
    [
      'transactionEvent: accepted',
      '/webhooks/accounts',
      auth,
      transactionEvent,
      'accept',
      202,
      {
        status: 'accepted',
        kind: 'transactionEvent',
        workflowId: transactionEventsWorkflowId(TEST_MERCHANT, 'consent-1'),
      },
    ],
    [
      'accounts: wrong Authorization',
      '/webhooks/accounts',
      { ...json, authorization: 'Bearer other' },
      transactionEvent,
      'accept',
      401,
      { error: 'unauthorized', message: 'Missing or wrong Authorization header' },
    ],
    [
      'accounts: wrong shape',
      '/webhooks/accounts',
      auth,
      '{"consentId":"consent-1","accounts":[]}',
      'accept',
      400,
      { error: 'bad_request', message: 'Malformed transactionEvent body' },
    ],
  ];

  const requestLines = () => lines.filter((l) => typeof l.reqId === 'string' && 'res' in l);

  it.each(cases)('%s', async (_what, path, headers, body, then, status, answer) => {
    outcome = then;
    const answered = await send(path, headers, body);
    expect(answered.status).toBe(status);
    expect(answered.body).toMatchObject(answer);
    if (status >= 400) expect(typeof answered.body.message).toBe('string');
    // Errors are problems (RFC 9457), as on every route.
    expect(answered.headers['content-type']).toBe(
      status >= 400 ? 'application/problem+json; charset=utf-8' : 'application/json; charset=utf-8',
    );
    expect(answered.headers['x-powered-by']).toBeUndefined();
    expect(signalled.length).toBe(status === 202 ? 1 : 0);
    // One request line, at debug for an answered webhook and info for an error; the hash never in it.
    const [line, ...more] = requestLines();
    expect(more).toEqual([]);
    expect(line).toMatchObject({ listener: 'public', res: { statusCode: status }, level: status < 400 ? 20 : 30 });
    expect(JSON.stringify(lines)).not.toContain(HASH);
    if (status >= 400 && status < 500)
      expect(lines.filter((l) => l.msg === 'request rejected')).toEqual([expect.objectContaining({ status })]);

    // Any other spelling Express routes to the same route gets the same answer and the same log lines.
    const first = lines.splice(0);
    const again = await send(path.replace('/webhooks/', '/Webhooks/'), headers, body);
    expect(again).toEqual(answered);
    const comparable = (l: Record<string, unknown>) => {
      const { time: _t, pid: _p, hostname: _h, reqId: _r, req: _q, responseTime: _rt, msg: _m, path: _pa, ...rest } = l;
      return rest;
    };
    expect(lines.map(comparable)).toEqual(first.map(comparable));
  });

  it('labels the request metric with the route pattern, never the raw path', async () => {
    const accepted = async () =>
      (await metrics.httpRequests.get()).values.find(
        (v) =>
          v.metricName === 'paylater_http_request_duration_seconds_count' &&
          v.labels.route === FINANCE &&
          v.labels.status === '202',
      )?.value ?? 0;
    const before = await accepted();
    await send(`${F}/${REF}/${HASH}`, json, finance);
    await send(`/Webhooks/Finance-Applications/${REF}/${HASH}`, json, finance);
    expect(await accepted()).toBe(before + 2);
    const labels = (await metrics.httpRequests.get()).values.map((v) => JSON.stringify(v.labels));
    expect(labels.join('\n')).not.toContain(HASH);
  });
});
