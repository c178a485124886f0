/**
 * The public listener's own dispatch of the bank's webhooks (src/api/direct-routes.ts): which requests it takes and
 * which it leaves to Express, and, on the real public app over HTTP with a scripted Temporal client, that a webhook
 * gets the same answer, log line and metric whichever of the two routed it.
 */
import type { IncomingMessage, ServerResponse, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import pino from 'pino';
import { createPublicApp } from '../../src/api/app';
import { directDispatch, directPattern, type DirectRoute } from '../../src/api/direct-routes';
import { HttpError } from '../../src/api/errors';
import { closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { webhookHash } from '../../src/security/webhook-hash';
import { postRaw } from '../../harness/http';
import { testMerchants } from '../helpers/merchants';

const FINANCE = '/webhooks/finance-applications/:ref/:hash';

describe('directPattern', () => {
  const matches = (path: string, url: string) => {
    const { regex, names } = directPattern(path);
    const m = regex.exec(url);
    return m ? { params: Object.fromEntries(names.map((n, i) => [n, m[i + 1]])), query: m[names.length + 1] } : null;
  };

  it('takes the exact path, parameters of unreserved characters, with or without a query', () => {
    expect(matches(FINANCE, '/webhooks/finance-applications/order-7/AbC_d-9')).toEqual({
      params: { ref: 'order-7', hash: 'AbC_d-9' },
      query: undefined,
    });
    expect(matches('/webhooks/finance-applications/:ref', '/webhooks/finance-applications/o.1~x?hash=h&x=1')).toEqual({
      params: { ref: 'o.1~x' },
      query: 'hash=h&x=1',
    });
    expect(matches('/webhooks/accounts', '/webhooks/accounts')).toEqual({ params: {}, query: undefined });
  });

  it.each([
    ['another letter case', '/Webhooks/finance-applications/order-7/h'],
    ['a trailing slash', '/webhooks/finance-applications/order-7/h/'],
    ['a percent-encoded parameter', '/webhooks/finance-applications/order%2D7/h'],
    ['a doubled slash', '//webhooks/finance-applications/order-7/h'],
    ['a missing parameter', '/webhooks/finance-applications/order-7/'],
    ['an extra segment', '/webhooks/finance-applications/order-7/h/x'],
    ['a fragment-like character', '/webhooks/finance-applications/order-7/h#x'],
  ])('leaves %s to Express', (_what, url) => {
    expect(matches(FINANCE, url)).toBeNull();
  });
});

describe('directDispatch', () => {
  const seen: { by: string; params?: unknown; query?: unknown; route?: unknown }[] = [];
  const route: DirectRoute = {
    path: FINANCE,
    handler: (req, res) => {
      seen.push({ by: 'direct', params: req.params, query: req.query, route: (req as { route?: unknown }).route });
      if (req.params.hash === 'fail') return Promise.reject(new HttpError(401, 'no'));
      res.end('direct');
      return Promise.resolve();
    },
  };
  const fallback = (_req: IncomingMessage, res: ServerResponse) => {
    seen.push({ by: 'express' });
    res.end('express');
  };
  const order: string[] = [];
  const listener = directDispatch({
    routes: [route],
    app: fallback,
    before: [
      (_req, _res, next) => {
        order.push('log');
        next();
      },
      (_req, _res, next) => {
        order.push('metric');
        next();
      },
    ],
    onError: (err, _req, res) => {
      order.push(`error ${(err as HttpError).status}`);
      res.statusCode = (err as HttpError).status;
      res.end();
    },
  });
  const dispatch = (method: string, url: string) => {
    const res = { end: jest.fn(), statusCode: 200 } as unknown as ServerResponse;
    listener({ method, url, headers: {} } as IncomingMessage, res);
    return res;
  };
  beforeEach(() => {
    seen.length = 0;
    order.length = 0;
  });

  it('routes a POST in the exact form itself, after the listener middleware, with Express-shaped params', async () => {
    dispatch('POST', '/webhooks/finance-applications/order-7/h1?hash=ignored');
    await new Promise(setImmediate);
    expect(order).toEqual(['log', 'metric']);
    expect(seen).toEqual([
      { by: 'direct', params: { ref: 'order-7', hash: 'h1' }, query: { hash: 'ignored' }, route: { path: FINANCE } },
    ]);
  });

  it("hands a receiver's rejection to the error answer", async () => {
    const res = dispatch('POST', '/webhooks/finance-applications/order-7/fail');
    await new Promise(setImmediate);
    expect(order).toEqual(['log', 'metric', 'error 401']);
    expect(res.statusCode).toBe(401);
  });

  it.each([
    ['GET', '/webhooks/finance-applications/order-7/h1'],
    ['HEAD', '/webhooks/finance-applications/order-7/h1'],
    ['POST', '/WEBHOOKS/finance-applications/order-7/h1'],
    ['POST', '/webhooks/finance-applications/order-7/h1/'],
    ['POST', '/webhooks/unknown'],
  ])('leaves %s %s to Express', (method, url) => {
    dispatch(method, url);
    expect(seen).toEqual([{ by: 'express' }]);
    expect(order).toEqual([]);
  });
});

describe('the public app: a webhook answered the same, routed directly or by Express', () => {
  const HASH_SECRET = 'direct-routes-test-hash-secret-0123';
  const REF = 'order-42';
  const HASH = webhookHash(HASH_SECRET, REF);
  const metrics = createMetrics();
  const lines: Record<string, unknown>[] = [];
  let server: Server;
  let port: number;
  let outcome: 'accept' | 'not-found' = 'accept';

  beforeAll(async () => {
    const answer = () =>
      outcome === 'accept' ? Promise.resolve() : Promise.reject(new WorkflowNotFoundError('gone', 'wf', undefined));
    const client = {
      workflow: { getHandle: () => ({ signal: answer }) },
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
        webhooks: { hashSecret: HASH_SECRET, securityHeader: '' },
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

  const send = async (path: string, headers: Record<string, string>, body: string) => {
    const { status, headers: answered, text } = await postRaw({ port, path, headers, body });
    const { date: _date, 'x-request-id': _id, ...rest } = answered;
    return { status, headers: rest, body: text };
  };

  const json = { 'content-type': 'application/json' };
  const valid = JSON.stringify({ financeApplicationId: 'fa-1' });
  const cases: [string, string, Record<string, string>, string, 'accept' | 'not-found'][] = [
    ['accepted', `/${REF}/${HASH}`, json, valid, 'accept'],
    ['accepted, hash in the query', `/${REF}?hash=${HASH}`, json, valid, 'accept'],
    ['ignored: no workflow', `/${REF}/${HASH}`, json, valid, 'not-found'],
    ['wrong hash', `/${REF}/${'x'.repeat(43)}`, json, valid, 'accept'],
    ['not JSON', `/${REF}/${HASH}`, { 'content-type': 'text/plain' }, valid, 'accept'],
    ['malformed JSON', `/${REF}/${HASH}`, json, '{"financeApplicationId":', 'accept'],
    ['wrong shape', `/${REF}/${HASH}`, json, '{"financeApplicationId":""}', 'accept'],
    ['too large', `/${REF}/${HASH}`, json, JSON.stringify({ financeApplicationId: 'x'.repeat(20_000) }), 'accept'],
  ];

  it.each(cases)('%s', async (_what, tail, headers, body, then) => {
    outcome = then;
    // The bank's form (direct), and a spelling only Express routes (the same route, its letter case changed).
    const direct = await send(`/webhooks/finance-applications${tail}`, headers, body);
    const directLines = lines.splice(0);
    const viaExpress = await send(`/webhooks/Finance-Applications${tail}`, headers, body);
    const expressLines = lines.splice(0);
    expect(direct).toEqual(viaExpress);
    // The same log lines, the request's path aside (it is logged as it arrived).
    const comparable = (l: Record<string, unknown>) => {
      const { time: _t, pid: _p, hostname: _h, reqId: _r, req: _q, responseTime: _rt, msg: _m, path: _pa, ...rest } = l;
      return rest;
    };
    expect(directLines.map(comparable)).toEqual(expressLines.map(comparable));
    expect(directLines.length).toBeGreaterThan(0);
  });

  it('labels the request metric with the route pattern either way', async () => {
    const accepted = async () =>
      (await metrics.httpRequests.get()).values.find(
        (v) =>
          v.metricName === 'http_request_duration_seconds_count' &&
          v.labels.route === FINANCE &&
          v.labels.status === '202',
      )?.value ?? 0;
    outcome = 'accept';
    const before = await accepted();
    await send(`/webhooks/finance-applications/${REF}/${HASH}`, json, valid);
    await send(`/webhooks/Finance-Applications/${REF}/${HASH}`, json, valid);
    expect(await accepted()).toBe(before + 2);
  });
});
