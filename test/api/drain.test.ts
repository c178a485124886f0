/**
 * The API's drain on shutdown (src/api/drain.ts) without Temporal: the phases as a state machine, what a listener
 * does in each over real sockets (Connection: close, idle connections closed, new connections refused, a long-poll
 * answered at the close, the rest answered or cut at the hard bound), and /readyz on both apps while draining.
 * test/e2e/drain.test.ts runs the same in real processes against Temporal.
 */
import { Agent, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { ApiDrain, drainListeners, type DrainPhase } from '../../src/api/drain';
import { answerBefore } from '../../src/api/deadlines';
import { HttpError } from '../../src/api/problem-details';
import { boundPort, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { testMerchants } from '../helpers/merchants';

const logger = pino({ level: 'silent' });

describe('ApiDrain (the phases)', () => {
  it('moves forward only, and says which signals a phase has fired', () => {
    const drain = new ApiDrain();
    const seen = () => ({
      phase: drain.phase,
      draining: drain.draining,
      closing: drain.closing.aborted,
      expired: drain.expired.aborted,
    });
    expect(seen()).toEqual({ phase: 'serving', draining: false, closing: false, expired: false });
    expect(drain.advance('draining')).toBe(true);
    expect(drain.advance('draining')).toBe(false);
    expect(seen()).toEqual({ phase: 'draining', draining: true, closing: false, expired: false });
    expect(drain.advance('closing')).toBe(true);
    expect(drain.advance('serving')).toBe(false);
    expect(drain.advance('draining')).toBe(false);
    expect(seen()).toEqual({ phase: 'closing', draining: true, closing: true, expired: false });
    expect(drain.advance('closed')).toBe(true);
    expect(seen()).toEqual({ phase: 'closed', draining: true, closing: true, expired: true });
  });

  it.each<[DrainPhase, boolean, boolean]>([
    ['draining', false, false],
    ['closing', true, false],
    ['expired', true, true],
    ['closed', true, true],
  ])('reaching %s straight from serving fires what the phases on the way fire', (phase, closing, expired) => {
    const drain = new ApiDrain();
    drain.advance(phase);
    expect({ draining: drain.draining, closing: drain.closing.aborted, expired: drain.expired.aborted }).toEqual({
      draining: true,
      closing,
      expired,
    });
  });
});

describe('answerBefore', () => {
  it("gives the call's result, or the error once the signal fires, leaving the call to finish", async () => {
    expect(await answerBefore(Promise.resolve(1), undefined, () => new Error('no'))).toBe(1);
    const stop = new AbortController();
    expect(await answerBefore(Promise.resolve(2), stop.signal, () => new Error('no'))).toBe(2);
    let finish!: (v: number) => void;
    const pending = answerBefore(new Promise<number>((r) => (finish = r)), stop.signal, () => new HttpError(503, 'x'));
    stop.abort();
    await expect(pending).rejects.toMatchObject({ status: 503 });
    finish(3);
    // Already aborted: answered at once.
    await expect(answerBefore(new Promise(() => undefined), stop.signal, () => new Error('late'))).rejects.toThrow(
      'late',
    );
  });
});

/** One HTTP/1.1 exchange over `agent` (keep-alive), with the status, headers and body. */
function get(
  port: number,
  path: string,
  agent: Agent,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Resolves once `count` requests reached the handler (a connection not yet accepted would be refused). */
const arrivedAt = (arrived: string[], count: number) =>
  new Promise<void>((resolve) => {
    const check = () => (arrived.length >= count ? resolve() : setTimeout(check, 10));
    check();
  });

/** Sockets the agent keeps open to `port` (idle keep-alive ones). */
const idleSockets = (agent: Agent) => Object.values(agent.freeSockets).flat().length;

describe('drainListeners over real sockets', () => {
  /** A listener whose routes wait on the test or on the drain's signals, tracked by `drain`. */
  async function serve(drain: ApiDrain) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const arrived: string[] = [];
    const server = await listen(
      drain.track((req, res) => {
        arrived.push(req.url ?? '');
        const answer = (status: number, text: string) => {
          res.statusCode = status;
          res.end(text);
        };
        if (req.url === '/quick') return answer(200, 'quick');
        // Answers when the test releases it (a webhook whose signal takes a while).
        if (req.url === '/slow') return void released.then(() => answer(200, 'slow'));
        // A long-poll: answered with the state as it stands when the listeners close.
        if (req.url === '/long-poll') return void drain.closing.addEventListener('abort', () => answer(200, 'now'));
        // Waits on Temporal past the grace period: answers 503 at the hard bound.
        if (req.url === '/stuck') return void drain.expired.addEventListener('abort', () => answer(503, 'retry'));
        // Never answers: cut at the hard bound.
        if (req.url === '/deaf') return;
        answer(404, 'no');
      }),
      0,
      '127.0.0.1',
    );
    return { server, port: boundPort(server), release, arrived };
  }

  const servers: Server[] = [];
  afterAll(() => servers.forEach((s) => s.closeAllConnections()));

  it('serves with Connection: close while draining, then finishes what is in flight and refuses new connections', async () => {
    const drain = new ApiDrain();
    const { server, port, release, arrived } = await serve(drain);
    servers.push(server);
    const agent = new Agent({ keepAlive: true });

    // Serving: keep-alive as usual; the connection stays open, idle.
    const before = await get(port, '/quick', agent);
    expect(before.headers.connection).toBe('keep-alive');
    expect(idleSockets(agent)).toBe(1);
    // A request in flight before the drain (its headers not sent yet) and a long-poll.
    const slow = get(port, '/slow', new Agent({ keepAlive: true }));
    const longPoll = get(port, '/long-poll', new Agent({ keepAlive: true }));
    await arrivedAt(arrived, 3);

    // SIGTERM: still served (the load balancer has not noticed yet), each answer closing its connection.
    drain.advance('draining');
    const during = await get(port, '/quick', agent);
    expect(during).toMatchObject({ status: 200, body: 'quick' });
    expect(during.headers.connection).toBe('close');

    // The delay is over: the listener stops accepting, the long-poll is answered, the slow request goes on.
    const drained = drainListeners(drain, [server], { delayMs: 0, graceMs: 60_000 }, logger);
    expect(drain.phase).toBe('closing');
    expect(await longPoll).toMatchObject({ status: 200, body: 'now', headers: { connection: 'close' } });
    await expect(get(port, '/quick', new Agent())).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(drain.phase).toBe('closing'); // the slow request holds it open
    release();
    expect(await slow).toMatchObject({ status: 200, body: 'slow', headers: { connection: 'close' } });
    await drained;
    expect(drain.phase).toBe('closed');
    agent.destroy();
  });

  it('closes an idle keep-alive connection when the listener stops accepting', async () => {
    const drain = new ApiDrain();
    const { server, port } = await serve(drain);
    servers.push(server);
    const agent = new Agent({ keepAlive: true });
    await get(port, '/quick', agent);
    const [socket] = Object.values(agent.freeSockets).flat();
    const closed = new Promise<void>((resolve) => socket!.once('close', () => resolve()));
    await drainListeners(drain, [server], { delayMs: 0, graceMs: 60_000 }, logger);
    await closed;
    expect(idleSockets(agent)).toBe(0);
  });

  it('at the hard bound, tells what still waits to answer (503), then closes every connection', async () => {
    const drain = new ApiDrain();
    const { server, port, arrived } = await serve(drain);
    servers.push(server);
    const stuck = get(port, '/stuck', new Agent());
    const deaf = get(port, '/deaf', new Agent());
    await arrivedAt(arrived, 2);
    await drainListeners(drain, [server], { delayMs: 0, graceMs: 100 }, logger);
    expect(drain.phase).toBe('closed');
    expect(await stuck).toMatchObject({ status: 503, body: 'retry', headers: { connection: 'close' } });
    await expect(deaf).rejects.toMatchObject({ code: 'ECONNRESET' });
  });
});

describe('/readyz while draining', () => {
  const drain = new ApiDrain();
  const deps: AppDeps = {
    client: {} as Client,
    taskQueue: 'unused',
    webhooks: { hashSecret: 'x'.repeat(32), securityHeader: '' },
    merchantApiKeys: [{ name: 'shop', key: 'drain-merchant-key-0123456789' }],
    operatorApiKeys: [{ name: 'ops', key: 'drain-operator-key-0123456789' }],
    merchants: testMerchants([{ name: 'shop' }]),
    logger,
    metrics: createMetrics(),
    checkTemporal: () => Promise.resolve(),
    drain,
  };
  const servers: Server[] = [];
  afterAll(() => servers.forEach((s) => (s.closeAllConnections(), s.close())));

  it('answers 503 draining on both listeners from the drain on, before either closes', async () => {
    const urls: string[] = [];
    for (const app of [createInternalApp(deps), createPublicApp(deps)]) {
      const server = await listen(drain.track(app), 0, '127.0.0.1');
      servers.push(server);
      urls.push(`http://127.0.0.1:${boundPort(server)}`);
    }
    const [internal, pub] = urls as [string, string];
    // A probe (no key) reads the status; an operator the details too.
    expect(await (await fetch(`${internal}/readyz`)).json()).toEqual({ status: 'ready' });
    const operator = { authorization: 'Bearer drain-operator-key-0123456789' };
    expect(await (await fetch(`${internal}/readyz`, { headers: operator })).json()).toEqual({
      status: 'ready',
      temporal: 'ok',
    });
    expect(await (await fetch(`${pub}/readyz`)).json()).toEqual({ status: 'ready' });
    drain.advance('draining');
    for (const url of urls) {
      const res = await fetch(`${url}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'draining', message: expect.stringMatching(/shutting down/) });
      // Liveness is not readiness: the process is alive and still serving.
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    }
  });
});
