/**
 * The receiver's signal deadline and the client's gRPC retries, against a scripted Temporal frontend (a bare
 * HTTP/2 server speaking gRPC's wire format) so that every answer is chosen by the test, not by load.
 *
 * The bug: the SDK's retry interceptor gives each attempt the call's one absolute deadline and schedules its
 * backoff without looking at it. A retryable failure whose backoff ends after the deadline starts an attempt
 * that grpc-js fails at once ("DEADLINE_EXCEEDED: Deadline exceeded after 0.000s, waiting for metadata
 * filters"): the webhook waited the whole deadline and the real status was lost.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { google, temporal } from '@temporalio/proto';
import pino from 'pino';
import { createPublicApp } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { tenantWebhookHash } from '../../src/security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { makeDeadlineBoundRetryInterceptor, MIN_ATTEMPT_MS } from '../../src/temporal/grpc-retry';
import { testMerchants } from '../helpers/merchants';

// gRPC status codes.
const OK = 0;
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const UNAVAILABLE = 14;
/** RESOURCE_EXHAUSTED with cause BusyWorkflow in its details, as Temporal answers while a run is closing. */
const BUSY = 'busy';
type Answer = number | typeof BUSY;

const busyDetails = Buffer.from(
  google.rpc.Status.encode({
    code: RESOURCE_EXHAUSTED,
    message: 'workflow operation can not be applied because workflow is closing',
    details: [
      {
        type_url: 'type.googleapis.com/temporal.api.errordetails.v1.ResourceExhaustedFailure',
        value: temporal.api.errordetails.v1.ResourceExhaustedFailure.encode({
          cause: temporal.api.enums.v1.ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW,
        }).finish(),
      },
    ],
  }).finish(),
).toString('base64');

/** A frontend that answers each SignalWorkflowExecution with the next status of `script` (then OK). */
async function scriptedFrontend() {
  let script: Answer[] = [];
  const signals: number[] = [];
  const server: Http2Server = createServer();
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    stream.resume(); // the request message is not needed
    stream.on('end', () => {
      if (!String(headers[':path']).endsWith('/SignalWorkflowExecution')) return answer(stream, OK);
      signals.push(Date.now());
      answer(stream, script.shift() ?? OK);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Statuses for the next signals, in order. */
    script(statuses: Answer[]) {
      script = [...statuses];
      signals.length = 0;
    },
    /** How many signal attempts reached the server since the last script(). */
    attempts: () => signals.length,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function answer(stream: ServerHttp2Stream, status: Answer): void {
  if (status === BUSY) {
    stream.respond(
      {
        ':status': 200,
        'content-type': 'application/grpc',
        'grpc-status': String(RESOURCE_EXHAUSTED),
        'grpc-message': encodeURIComponent('workflow operation can not be applied because workflow is closing'),
        'grpc-status-details-bin': busyDetails,
      },
      { endStream: true },
    );
    return;
  }
  if (status !== OK) {
    // Trailers-only response, as a server that refuses the call sends it.
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': 'scripted' },
      { endStream: true },
    );
    return;
  }
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  stream.end(Buffer.alloc(5)); // one empty message: no compression flag, length 0
}

const signalUnder = (client: Client, deadlineMs: number) =>
  client.withDeadline(Date.now() + deadlineMs, () =>
    client.workflow.getHandle(`wf-${randomUUID()}`).signal(financeApplicationStatusChangedSignal, {
      financeApplicationId: 'fa-1',
    }),
  );

const grpcCodeOf = (err: unknown): number | undefined => {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) if (isGrpcServiceError(e)) return e.code;
  return undefined;
};

describe('signal deadline and gRPC retries', () => {
  let frontend: Awaited<ReturnType<typeof scriptedFrontend>>;
  const connections: Connection[] = [];
  const clientWith = (options: Partial<NonNullable<Parameters<typeof Connection.lazy>[0]>> = {}) => {
    const connection = Connection.lazy({ ...options, address: frontend.address });
    connections.push(connection);
    return new Client({ connection, namespace: 'default' });
  };

  // A frontend per test: the SDK's late attempt (below) must not land in the next test's count.
  beforeEach(async () => {
    frontend = await scriptedFrontend();
  });
  afterEach(async () => {
    for (const c of connections.splice(0)) await c.close();
    await frontend?.close();
  });

  it("the SDK's own interceptor starts a retry after the deadline and reports DEADLINE_EXCEEDED instead of the real status", async () => {
    // RESOURCE_EXHAUSTED: the SDK's first backoff is 1.36–2.04 s, always past a 1 s deadline.
    frontend.script([RESOURCE_EXHAUSTED, RESOURCE_EXHAUSTED]);
    const err = await signalUnder(clientWith(), 1_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(grpcCodeOf(err)).toBe(DEADLINE_EXCEEDED);
    // The caller got the error before the second attempt reached the server (grpc-js still sends it, with
    // grpc-timeout 0m, after the caller has given up).
    expect(frontend.attempts()).toBe(1);
  });

  it('the deadline-bound interceptor ends the call with the real status when no attempt fits before the deadline', async () => {
    frontend.script([RESOURCE_EXHAUSTED, RESOURCE_EXHAUSTED]);
    const client = clientWith({ interceptors: [makeDeadlineBoundRetryInterceptor()] });
    // Less than MIN_ATTEMPT_MS of budget: no retry at all.
    const err = await signalUnder(client, MIN_ATTEMPT_MS - 100).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(grpcCodeOf(err)).toBe(RESOURCE_EXHAUSTED);
    expect(frontend.attempts()).toBe(1);
  });

  it('the deadline-bound interceptor shortens a backoff that would pass the deadline to one last attempt', async () => {
    // 3 s: the first backoff (1.36–2.04 s) fits, the second (2.31–3.47 s) does not and is cut short.
    frontend.script([RESOURCE_EXHAUSTED, RESOURCE_EXHAUSTED]);
    const client = clientWith({ interceptors: [makeDeadlineBoundRetryInterceptor()] });
    await expect(signalUnder(client, 3_000)).resolves.toBeUndefined();
    expect(frontend.attempts()).toBe(3);
  });

  it('the deadline-bound interceptor still retries as the SDK does when the backoff fits: transient UNAVAILABLE', async () => {
    frontend.script([UNAVAILABLE, UNAVAILABLE]);
    const client = clientWith({ interceptors: [makeDeadlineBoundRetryInterceptor()] });
    await expect(signalUnder(client, 30_000)).resolves.toBeUndefined();
    expect(frontend.attempts()).toBe(3);
  });

  it('a retry due after its connection was closed ends the call with CANCELLED, not an uncaught "Channel has been shut down"', async () => {
    // RESOURCE_EXHAUSTED (not BusyWorkflow): the retry is due about 1 s later, after the close below.
    frontend.script([RESOURCE_EXHAUSTED]);
    const client = clientWith({ interceptors: [makeDeadlineBoundRetryInterceptor()] });
    const outcome = signalUnder(client, 30_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    while (frontend.attempts() < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the refusal is in; the retry is scheduled
    await client.connection.close();
    expect(grpcCodeOf(await outcome)).toBe(CANCELLED);
    expect(frontend.attempts()).toBe(1);
  });

  it('a workflow whose run is closing (BusyWorkflow) is retried from 100 ms, so the signal lands within the deadline', async () => {
    // The SDK's backoff (1.36 s, then 2.31 s more) allows at most 3 attempts in 4 s, the third after the deadline.
    frontend.script([BUSY, BUSY, BUSY]);
    const client = clientWith({ interceptors: [makeDeadlineBoundRetryInterceptor()] });
    await expect(signalUnder(client, 4_000)).resolves.toBeUndefined();
    expect(frontend.attempts()).toBe(4);
  });

  it('the webhook gets 503 with the real cause, logged as one warn line without a stack', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    const hashSecret = 'deadline-test-hash-secret-0123456789';
    const metrics = createMetrics();
    const app = createPublicApp({
      client: clientWith({ interceptors: [makeDeadlineBoundRetryInterceptor()] }),
      taskQueue: 'unused',
      webhooks: { hashSecret, securityHeader: '' },
      merchantApiKeys: [],
      merchants: testMerchants(),
      logger: pino({ level: 'info' }, sink),
      metrics,
      checkTemporal: () => Promise.resolve(),
    });
    const server: Server = await listen(app, 0, '127.0.0.1');
    try {
      // Busy at every attempt the route's 4 s allow (the last one started at the deadline less MIN_ATTEMPT_MS).
      frontend.script(Array.from({ length: 20 }, () => BUSY));
      const ref = `deadline-${randomUUID()}`;
      const res = await fetch(
        `http://127.0.0.1:${boundPort(server)}/webhooks/finance-applications/test~${ref}/${tenantWebhookHash(hashSecret, 'test', ref)}`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ financeApplicationId: 'fa-1' }),
        },
      );
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBeTruthy();
      expect(await res.json()).toMatchObject({ error: 'unavailable' });
      expect(frontend.attempts()).toBeGreaterThanOrEqual(2);

      const logged = lines.filter((l) => (l.level as number) >= 40);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({
        level: 40,
        status: 503,
        // The hash is a credential for the reference: never in a log line.
        path: `/webhooks/finance-applications/test~${ref}/:hash`,
      });
      expect(JSON.stringify(logged[0])).not.toContain(tenantWebhookHash(hashSecret, 'test', ref));
      // The busy frontend's answer; on a starved machine the last attempt can run out of its own short deadline
      // first, and then that is the cause (a CI run saw it). Never a stack.
      expect(logged[0]!.cause).toMatch(/RESOURCE_EXHAUSTED|DEADLINE_EXCEEDED/);
      expect(JSON.stringify(logged[0])).not.toMatch(/stack/);
      expect(await metrics.registry.getSingleMetricAsString('paylater_bank_webhooks_total')).toMatch(
        /outcome="unavailable"\} 1/,
      );
    } finally {
      await closeServer(server, 100);
    }
  });

  it('other 5xx stay errors with their stack', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    // A client whose signal fails with an error that is not Temporal being unavailable.
    const broken = {
      workflow: { getHandle: () => ({ signal: () => Promise.reject(new Error('boom')) }) },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    } as unknown as Client;
    const hashSecret = 'deadline-test-hash-secret-0123456789';
    const app = createPublicApp({
      client: broken,
      taskQueue: 'unused',
      webhooks: { hashSecret, securityHeader: '' },
      merchantApiKeys: [],
      merchants: testMerchants(),
      logger: pino({ level: 'info' }, sink),
      metrics: createMetrics(),
      checkTemporal: () => Promise.resolve(),
    });
    const server: Server = await listen(app, 0, '127.0.0.1');
    try {
      const ref = `broken-${randomUUID()}`;
      const res = await fetch(
        `http://127.0.0.1:${boundPort(server)}/webhooks/finance-applications/test~${ref}/${tenantWebhookHash(hashSecret, 'test', ref)}`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"financeApplicationId":"x"}' },
      );
      expect(res.status).toBe(500);
      const logged = lines.filter((l) => (l.level as number) >= 40);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ level: 50, err: { message: 'boom', stack: expect.any(String) } });
    } finally {
      await closeServer(server, 100);
    }
  });
});
