/**
 * Log lines an operator relies on: the bank client's metadata (status, cause) on the worker's logger, request ids on
 * both listeners (validated, echoed), quiet successful webhooks, the format choice, trace ids inside a span, and the
 * bank's ids on every activity line.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import { createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { requestIdFrom, requestLineLevel } from '../../src/api/request-log';
import { activityIds } from '../../src/activities/log-attributes';
import { loadConfig } from '../../src/config';
import { createLogger, PinoTemporalLogger, resolveLogFormat } from '../../src/telemetry/logging';
import { financeApplicationWebhookUrl, tenantWebhookHash } from '../../src/security/webhook-hash';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { withRequestId, requestLogIds } from '../../src/telemetry/request-context';
import { createWorkerBankClient } from '../../src/worker/factory';
import { startTestStack, type TestStack } from '../helpers/stack';
import { claimTestConsent, TEST_MERCHANT, testMerchants } from '../helpers/merchants';

function capture(): { lines: Record<string, unknown>[]; raw: string[]; sink: Writable } {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { lines, raw, sink };
}

const serve = async (handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> => {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
};

describe("the worker's bank client logs with its metadata", () => {
  it('"Bank token request refused" carries the status and the error; "failed" carries the cause', async () => {
    const { lines, sink } = capture();
    const logger = createLogger({ level: 'debug', destination: sink });
    const bank = await serve((_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('down'));
    const refused = createWorkerBankClient(loadConfig({}), { authUrl: bank.url, baseUrl: bank.url }, logger);
    const unreachable = createWorkerBankClient(
      loadConfig({}),
      { authUrl: 'http://127.0.0.1:1', baseUrl: 'http://127.0.0.1:1' },
      logger,
    );
    try {
      await expect(refused.tokens.getToken()).rejects.toThrow();
      await expect(unreachable.tokens.getToken()).rejects.toThrow();
    } finally {
      await refused.close();
      await unreachable.close();
      bank.server.close();
    }
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ msg: 'Bank token request refused', status: 503, component: 'bank-client' }),
        expect.objectContaining({
          msg: 'Bank token request failed',
          component: 'bank-client',
          error: expect.any(String),
        }),
      ]),
    );
    // The SDK-shaped meta is fields of the line, never text pasted into the message.
    expect(lines.every((l) => typeof l.msg === 'string' && !String(l.msg).includes('{'))).toBe(true);
  });
});

describe('request log on both listeners', () => {
  const { lines, sink } = capture();
  const HASH_SECRET = 'request-log-test-hash-secret-0123456789';
  let servers: Server[] = [];
  let publicUrl: string;
  let internalUrl: string;

  beforeAll(async () => {
    const client = {
      workflow: { getHandle: () => ({ signal: () => Promise.resolve() }) },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    } as unknown as Client;
    const deps: AppDeps = {
      client,
      taskQueue: 'unused',
      webhooks: { hashSecret: HASH_SECRET, securityHeader: 'Basic eDp5' },
      merchantApiKeys: [{ name: 'shop', key: 'request-log-test-key-0123456789abcdef' }],
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

  const requestLines = (id: string) => lines.filter((l) => (l.req as { id?: string } | undefined)?.id === id);

  it("keeps a valid X-Request-Id, echoes it, and logs it on the request's line (both listeners)", async () => {
    for (const url of [`${publicUrl}/healthz`, `${internalUrl}/applications`]) {
      const id = `req-${Math.random().toString(36).slice(2)}`;
      const res = await fetch(url, { headers: { 'x-request-id': id } });
      expect(res.headers.get('x-request-id')).toBe(id);
      expect(requestLines(id)).toHaveLength(1);
    }
  });

  it("chooses the request line's level from the path and the answer", () => {
    expect(requestLineLevel('/webhooks/accounts', 202, false)).toBe('debug');
    expect(requestLineLevel('//webhooks/finance-applications/r/h?x=1', 200, false)).toBe('debug');
    expect(requestLineLevel('/healthz', 200, false)).toBe('debug');
    expect(requestLineLevel('/readyz?verbose', 200, false)).toBe('debug');
    expect(requestLineLevel('/applications', 201, false)).toBe('info');
    expect(requestLineLevel('/webhooks/accounts', 401, false)).toBe('info');
    expect(requestLineLevel('/healthz', 503, false)).toBe('info');
    expect(requestLineLevel('/applications', 200, true)).toBe('error');
  });

  it('replaces an unsafe or overlong X-Request-Id with a generated one', async () => {
    for (const bad of ['a'.repeat(129), 'with space', 'quote"', '']) {
      const res = await fetch(`${publicUrl}/healthz`, { headers: { 'x-request-id': bad } });
      const echoed = res.headers.get('x-request-id');
      expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
      expect(echoed).not.toBe(bad);
    }
    expect(requestIdFrom(undefined)).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdFrom(['a', 'b'])).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs a successful webhook at debug, a refused one at info (its cause is the error middleware’s line), and never the hash (path or query) nor headers', async () => {
    const ref = 'order-2002';
    const hash = tenantWebhookHash(HASH_SECRET, TEST_MERCHANT, ref);
    const body = JSON.stringify({ financeApplicationId: 'fa-1' });
    const ok = await fetch(`${publicUrl}/webhooks/finance-applications/${TEST_MERCHANT}~${ref}/${hash}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'hook-ok' },
      body,
    });
    expect(ok.status).toBe(202);
    const bad = await fetch(`${publicUrl}/webhooks/finance-applications/${TEST_MERCHANT}~${ref}?hash=${hash}x`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'hook-bad' },
      body,
    });
    expect(bad.status).toBe(401);
    expect(requestLines('hook-ok')).toEqual([
      expect.objectContaining({
        level: 20,
        req: { id: 'hook-ok', method: 'POST', path: `/webhooks/finance-applications/${TEST_MERCHANT}~${ref}/:hash` },
        res: { statusCode: 202 },
      }),
    ]);
    expect(requestLines('hook-bad')).toEqual([
      expect.objectContaining({
        level: 30,
        req: { id: 'hook-bad', method: 'POST', path: `/webhooks/finance-applications/${TEST_MERCHANT}~${ref}` },
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(hash);
  });
});

describe('the request id on every line of a request, whichever logger writes it (whole stack)', () => {
  const { lines, raw, sink } = capture();
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ logger: createLogger({ level: 'debug', destination: sink }) });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const linesOf = (msg: string) => lines.filter((l) => l.msg === msg);
  const startApplication = (ref: string, requestId: string) =>
    stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ merchantReference: ref, redirectUrl: 'https://shop.example/done' }),
    });

  it("the facade's handler line, after its JSON body was parsed, with the application's ids (two requests at once)", async () => {
    const refs = [`log-a-${Date.now()}`, `log-b-${Date.now()}`];
    const answers = await Promise.all(refs.map((ref) => startApplication(ref, `req-${ref}`)));
    expect(answers.map((a) => a.status)).toEqual([201, 201]);
    for (const [i, ref] of refs.entries()) {
      const { financeApplicationId } = (await answers[i]!.json()) as { financeApplicationId: string };
      expect(linesOf('finance application started').filter((l) => l.merchantReference === ref)).toEqual([
        expect.objectContaining({
          reqId: `req-${ref}`,
          merchantReference: ref,
          financeApplicationId,
          workflowId: financeApplicationWorkflowId(TEST_MERCHANT, ref),
        }),
      ]);
    }
  });

  it("the request line carries the id once (its own reqId and the mixin's merge into one key)", () => {
    const requestLines = raw.filter((l) => l.includes('"req":{"id":"req-log-'));
    expect(requestLines.length).toBeGreaterThanOrEqual(2);
    for (const line of requestLines) expect(line.match(/"reqId":/g)).toHaveLength(1);
  });

  it("the error middleware's line", async () => {
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-invalid' },
      body: JSON.stringify({ merchantReference: 'no-redirect' }),
    });
    expect(res.status).toBe(400);
    expect(linesOf('request rejected').filter((l) => l.reqId === 'req-invalid')).toEqual([
      expect.objectContaining({ status: 400, path: '/applications' }),
    ]);
  });

  it("the receiver pipeline's lines: a finance webhook nobody waits for, an accountEvent handed off as late", async () => {
    const ref = `log-nobody-${Date.now()}`;
    const hook = await fetch(
      financeApplicationWebhookUrl(stack.publicUrl, stack.webhooks.hashSecret, ref, TEST_MERCHANT),
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'req-nobody' },
        body: JSON.stringify({ financeApplicationId: 'fa-unknown' }),
      },
    );
    expect(hook.status).toBe(200);
    expect(lines.filter((l) => l.reqId === 'req-nobody' && l.level === 40)).toEqual([
      expect.objectContaining({ merchant: TEST_MERCHANT, merchantReference: ref, financeApplicationId: 'fa-unknown' }),
    ]);

    const consentId = `log-consent-${Date.now()}`;
    await claimTestConsent(stack.t, consentId); // only a claimed consent's reports are kept
    const late = await fetch(`${stack.publicUrl}/webhooks/accounts`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: stack.webhooks.securityHeader,
        'x-request-id': 'req-late',
      },
      body: JSON.stringify({
        consentId,
        taskId: 'task-none',
        taskStatus: 'FINISHED',
        bankCode: 'B1',
        bankName: 'Bank one',
        accounts: [{ accountId: 'acc-1', eventType: 'ADDED' }],
      }),
    });
    expect(late.status).toBe(202);
    expect(linesOf('accountEvent handed off as a late bank report')).toEqual([
      expect.objectContaining({ reqId: 'req-late', consentId, taskId: 'task-none' }),
    ]);
  });

  it('no request id outside a request', () => {
    expect(requestLogIds()).toEqual({});
    expect(withRequestId('r-1', () => requestLogIds())).toEqual({ reqId: 'r-1' });
    const { lines: outside, sink: outsideSink } = capture();
    createLogger({ destination: outsideSink }).info('not in a request');
    expect(outside[0]).not.toHaveProperty('reqId');
  });
});

describe("the Temporal SDK's own lines", () => {
  it('logs the bank-reads worker\'s "No workflows registered" at debug (it registers activities only); any other queue\'s stays a warning', () => {
    const { lines, sink } = capture();
    const sdk = new PinoTemporalLogger(createLogger({ level: 'debug', format: 'json', destination: sink }));
    const message = 'No workflows registered, not polling for workflow tasks';
    sdk.warn(message, { sdkComponent: 'worker', taskQueue: 'paylater-bank-reads' });
    sdk.warn(message, { sdkComponent: 'worker', taskQueue: 'paylater' });
    sdk.warn(message, { sdkComponent: 'worker', taskQueue: '-bank-reads' });
    sdk.warn('Something else', { sdkComponent: 'worker', taskQueue: 'paylater-bank-reads' });
    expect(lines.map((l) => [l.level, l.taskQueue, l.msg])).toEqual([
      [20, 'paylater-bank-reads', message],
      [40, 'paylater', message],
      [40, '-bank-reads', message],
      [40, 'paylater-bank-reads', 'Something else'],
    ]);
  });
});

describe('format and ids', () => {
  it('is pretty on a terminal, JSON otherwise, and LOG_FORMAT overrides', () => {
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat(undefined, false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT: must be json or pretty/);
  });

  it("takes the application's and the refresh's ids from an activity's input, nothing else", () => {
    expect(
      activityIds({ merchantReference: 'r1', financeApplicationId: 'fa-1', application: { name: 'Jane' } }),
    ).toEqual({ merchantReference: 'r1', financeApplicationId: 'fa-1' });
    expect(activityIds({ consentId: 'c1', taskId: 't1' })).toEqual({ consentId: 'c1', taskId: 't1' });
    // A merchant callback's ids are in its event (notifyMerchant's lines: "Merchant notified", "… failed").
    expect(
      activityIds({
        url: 'https://shop.example/cb',
        idempotencyKey: 'k',
        event: {
          type: 'finance-application.status-changed',
          merchantReference: 'r1',
          financeApplicationId: 'fa-1',
          status: 'APPROVED',
        },
      }),
    ).toEqual({ merchantReference: 'r1', financeApplicationId: 'fa-1' });
    expect(
      activityIds({ event: { type: 'transactionsChanged', consentId: 'c1', accounts: [{ accountId: 'a' }] } }),
    ).toEqual({
      consentId: 'c1',
    });
    expect(activityIds(undefined)).toEqual({});
  });
});

describe('tracing configuration', () => {
  it('is off without an endpoint, on with one, and names bad values', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: undefined,
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/v1/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'paylater-eu',
      }).tracing,
    ).toEqual({ url: 'https://traces.example/v1/traces', protocol: 'http/json', serviceName: 'paylater-eu' });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    ).toBeUndefined();
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: must be/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: must be an absolute http\(s\) URL/,
    );
  });
});
