/**
 * No log line carries a credential: a finance webhook's hash (in the path or the query), a merchant API key, the
 * account webhooks' security header, a token. Both listeners with the production logger (createLogger) and a
 * Temporal client that is down, so every kind of answer is logged: 4xx at info, 503 at warn.
 */
import { request as httpRequest, type Server } from 'node:http';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import { createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { loggablePath } from '../../src/security/redaction';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { createLogger } from '../../src/telemetry/logging';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { testMerchants } from '../helpers/merchants';

const HASH_SECRET = 'redaction-test-hash-secret-0123456789';
const PREVIOUS_SECRET = 'redaction-test-previous-secret-012345';
const API_KEY = 'redaction-test-merchant-key-0123456789';
const SECURITY_HEADER = 'Basic cmVkYWN0aW9uOnRlc3Q=';
const REF = 'order-1001';
const KEY = `test~${REF}`;
const HASH = tenantWebhookHash(HASH_SECRET, 'test', REF);
const OLD_HASH = tenantWebhookHash(PREVIOUS_SECRET, 'test', REF);

describe('redaction: no credential reaches a log line', () => {
  const lines: string[] = [];
  let servers: Server[] = [];
  let publicUrl: string;
  let internalUrl: string;
  let deps: AppDeps;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    const unavailable = () =>
      Promise.reject(
        Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED'), {
          code: 14,
          details: 'connect ECONNREFUSED',
          metadata: {},
        }),
      );
    const client = {
      workflow: { getHandle: () => ({ signal: unavailable, query: unavailable }), signalWithStart: unavailable },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    } as unknown as Client;
    deps = {
      client,
      taskQueue: 'unused',
      webhooks: {
        hashSecret: HASH_SECRET,
        previousHashSecret: PREVIOUS_SECRET,
        securityHeader: SECURITY_HEADER,
      },
      merchantApiKeys: [{ name: 'shop', key: API_KEY }],
      merchants: testMerchants([{ name: 'shop' }]),
      logger: createLogger({ level: 'debug', destination: sink }),
      metrics: createMetrics(),
      checkTemporal: () => Promise.resolve(),
    };
    servers = [
      await listen(createPublicApp(deps), 0, '127.0.0.1'),
      await listen(createInternalApp(deps), 0, '127.0.0.1'),
    ];
    publicUrl = `http://127.0.0.1:${boundPort(servers[0]!)}`;
    internalUrl = `http://127.0.0.1:${boundPort(servers[1]!)}`;
  });
  afterAll(async () => {
    for (const server of servers) await closeServer(server, 100);
  });

  const secrets = [HASH, OLD_HASH, API_KEY, API_KEY.slice(0, 24), SECURITY_HEADER, HASH_SECRET, PREVIOUS_SECRET];
  const expectNoSecretLogged = () => {
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines)
      for (const secret of secrets) expect({ line, leaks: line.includes(secret) }).toMatchObject({ leaks: false });
  };

  it('logs webhook answers of every kind with the hash replaced, in the path and in the query', async () => {
    const json = { 'content-type': 'application/json' };
    const body = JSON.stringify({ financeApplicationId: 'fa-1' });
    const requests: [string, RequestInit, number][] = [
      [`/webhooks/finance-applications/${KEY}/${HASH}`, { method: 'POST', headers: json, body }, 503],
      [`/webhooks/finance-applications/${KEY}/${OLD_HASH}`, { method: 'POST', headers: json, body }, 503],
      [`/webhooks/finance-applications/${KEY}?hash=${HASH}`, { method: 'POST', headers: json, body }, 503],
      [
        `/webhooks/finance-applications/${KEY}/${HASH}`,
        { method: 'POST', headers: { 'content-type': 'text/plain' }, body },
        415,
      ],
      [`/webhooks/finance-applications/${KEY}/${HASH}`, { method: 'POST', headers: json, body: '{"x":' }, 400],
      [
        `/webhooks/finance-applications/${KEY}/${HASH}`,
        { method: 'POST', headers: json, body: 'x'.repeat(20_000) },
        413,
      ],
      [`/webhooks/finance-applications/${KEY}/${HASH}`, { method: 'POST', headers: json, body: '{}' }, 400],
      [`/webhooks/finance-applications/${KEY}/${HASH}/`, { method: 'POST', headers: json, body: '[]' }, 400],
      [`/WEBHOOKS/Finance-Applications/${KEY}/${HASH}`, { method: 'POST', headers: json, body: '[]' }, 400],
      [`/webhooks/finance-applications/${KEY}/${HASH}/extra`, { method: 'POST', headers: json, body }, 404],
      [`/webhooks/finance-applications/${KEY}/${HASH}`, { method: 'GET' }, 405],
      [`//webhooks/finance-applications/${KEY}/${HASH}`, { method: 'POST', headers: json, body }, 404],
      [
        `/webhooks/finance-applications/${KEY}?hash=${HASH}`,
        { method: 'POST', headers: { 'content-type': 'text/plain' }, body },
        415,
      ],
      [`/webhooks/other/${HASH}`, { method: 'POST', headers: json, body }, 404],
      [
        '/webhooks/accounts',
        { method: 'POST', headers: { ...json, authorization: `${SECURITY_HEADER}x` }, body: '{}' },
        401,
      ],
      ['/webhooks/accounts', { method: 'POST', headers: { ...json, authorization: SECURITY_HEADER }, body: '{}' }, 400],
    ];
    for (const [path, init, status] of requests) {
      const res = await fetch(`${publicUrl}${path}`, init);
      expect({ path, status: res.status }).toEqual({ path, status });
      // Error bodies do not echo the hash either.
      expect(await res.text()).not.toContain(HASH);
    }
    expect(lines.filter((l) => l.includes(`/webhooks/finance-applications/${KEY}/:hash`)).length).toBeGreaterThan(5);
    expect(lines.filter((l) => l.includes('"level":40')).length).toBeGreaterThanOrEqual(3); // the 503s
    expectNoSecretLogged();
  });

  it('logs a request line in the absolute form (`POST http://host/webhooks/…`) with its path redacted too', async () => {
    const body = JSON.stringify({ financeApplicationId: 'fa-1' });
    for (const target of [
      `${publicUrl}/webhooks/finance-applications/${KEY}/${HASH}`,
      `${publicUrl}/webhooks/finance-applications/${KEY}?hash=${HASH}`,
      `http://elsewhere.example/webhooks/finance-applications/${KEY}/${HASH}/x?hash=${HASH}`,
    ]) {
      const status = await new Promise<number>((resolve, reject) => {
        // fetch always sends the origin form; node:http sends the path it is given as the request target.
        const req = httpRequest(
          { host: '127.0.0.1', port: boundPort(servers[0]!), method: 'POST', path: target },
          (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
        );
        req.on('error', reject);
        req.setHeader('content-type', 'application/json');
        req.end(body);
      });
      expect([target, status >= 400]).toEqual([target, true]);
    }
    expect(
      lines.filter((l) => l.includes(`"path":"/webhooks/finance-applications/${KEY}/:hash"`)).length,
    ).toBeGreaterThan(0);
    expectNoSecretLogged();
  });

  it('logs facade answers with the key name at most, never the key', async () => {
    const answers = [
      await fetch(`${internalUrl}/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
        body: '{"merchantReference":"bad ref"}',
      }),
      await fetch(`${internalUrl}/applications/${REF}`, { headers: { authorization: `Bearer ${API_KEY}x` } }),
      await fetch(`${internalUrl}/applications/${REF}`, {
        headers: { authorization: `Bearer ${API_KEY.slice(0, 24)}` },
      }),
      await fetch(`${internalUrl}/applications/bad%20ref`, { headers: { authorization: `Bearer ${API_KEY}` } }),
    ];
    expect(answers.map((r) => r.status)).toEqual([400, 401, 401, 400]);
    expectNoSecretLogged();
  });

  it('redacts secrets a caller passes to the logger by mistake, under their usual names', () => {
    deps.logger.info(
      {
        headers: { authorization: `Bearer ${API_KEY}`, 'x-api-key': API_KEY, cookie: `k=${API_KEY}` },
        req: { headers: { authorization: SECURITY_HEADER } },
        apiKey: API_KEY,
        hash: HASH,
        webhooks: { hashSecret: HASH_SECRET, previousHashSecret: PREVIOUS_SECRET, securityHeader: SECURITY_HEADER },
        path: `/webhooks/finance-applications/${KEY}/${OLD_HASH}`,
        url: `https://bank.example/webhooks/finance-applications/${KEY}?hash=${HASH}`,
        callbackUrl: `https://shop.example/hooks/${API_KEY}?token=${API_KEY}`,
      },
      'a careless line',
    );
    const careless = lines.find((l) => l.includes('a careless line'))!;
    expect(careless).toContain('[redacted]');
    expect(careless).toContain(`/webhooks/finance-applications/${KEY}/:hash`);
    expect(careless).toContain(`"url":"https://bank.example/webhooks/finance-applications/${KEY}"`);
    expect(careless).toContain('"callbackUrl":"https://shop.example/:callback-path"');
    expectNoSecretLogged();
  });

  it('loggablePath replaces whatever follows a finance webhook reference, however the path is spelled', () => {
    expect(loggablePath(`/webhooks/finance-applications/${KEY}/${HASH}`)).toBe(
      `/webhooks/finance-applications/${KEY}/:hash`,
    );
    expect(loggablePath(`/Webhooks/FINANCE-applications/${REF}/${HASH}/`)).toBe(
      `/Webhooks/FINANCE-applications/${REF}/:hash`,
    );
    expect(loggablePath(`//webhooks//finance-applications/${REF}/${HASH}/x`)).toBe(
      `//webhooks//finance-applications/${REF}/:hash`,
    );
    expect(loggablePath(`/webhooks/accounts/${HASH}`)).toBe('/webhooks/accounts/:redacted');
    expect(loggablePath('/webhooks/accounts')).toBe('/webhooks/accounts');
    expect(loggablePath(`/applications/${REF}`)).toBe(`/applications/${REF}`);
  });
});
