/**
 * The two app factories without Temporal: what each listener serves, and the internal app's extension point for
 * routers written elsewhere (the codec endpoint), with the exported `authenticateOperator` in front.
 */
import { Router } from 'express';
import type { Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { authenticateOperator, createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { operatorOf } from '../../src/api/authenticate';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { startListeners } from '../../src/api/listeners';
import { loadConfig } from '../../src/config';
import { createPayloadCodec } from '../../src/security/payload-codec';
import { testMerchants } from '../helpers/merchants';
import { connectTestTemporal, type TemporalTestContext } from '../helpers/temporal';

const KEY = 'listeners-test-key-0123456789abcdef';
const MERCHANT_KEY = 'listeners-merchant-key-0123456789';

describe('createPublicApp and createInternalApp', () => {
  const servers: Server[] = [];
  const deps: AppDeps = {
    client: {} as Client,
    taskQueue: 'unused',
    webhooks: { hashSecret: 'x'.repeat(32), securityHeader: '' },
    merchantApiKeys: [{ name: 'shop', key: MERCHANT_KEY }],
    merchants: testMerchants([{ name: 'shop' }]),
    operatorApiKeys: [{ name: 'ops', key: KEY }],
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    checkTemporal: () => Promise.resolve(),
  };
  afterAll(async () => {
    for (const server of servers) await closeServer(server, 100);
  });
  const serve = async (app: Parameters<typeof listen>[0]) => {
    const server = await listen(app, 0, '127.0.0.1');
    servers.push(server);
    return `http://127.0.0.1:${boundPort(server)}`;
  };

  /** A stand-in for the codec router (mounted at /codec): POST /decode echoes the operator's name. */
  const codecLike = () =>
    Router().post('/decode', (_req, res) => {
      res.json({ decodedFor: operatorOf(res) ?? null });
    });

  it('mounts extra routers on the internal listener, behind authenticateOperator when the caller puts it in front', async () => {
    const internal = await serve(
      createInternalApp(deps, {
        extraRouters: (d) => [Router().use('/codec', authenticateOperator(d), codecLike())],
      }),
    );
    const decode = (headers: Record<string, string>) => fetch(`${internal}/codec/decode`, { method: 'POST', headers });
    const refused = await decode({});
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await decode({ authorization: 'Bearer wrong-key-0123456789abcdef' })).status).toBe(401);
    const ok = await decode({ authorization: `Bearer ${KEY}` });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ decodedFor: 'ops' });
    // A merchant's key is answered here as any key that is not an operator's; an operator's opens no merchant route.
    expect((await decode({ authorization: `Bearer ${MERCHANT_KEY}` })).status).toBe(401);
    const facade = (key: string) =>
      fetch(`${internal}/applications/x`, { headers: { authorization: `Bearer ${key}` } });
    expect((await facade(KEY)).status).toBe(401);
    // Probes stay open; the facade needs the key before anything else is looked at.
    expect((await fetch(`${internal}/readyz`)).status).toBe(200);
    expect((await fetch(`${internal}/applications/x`)).status).toBe(401);
  });

  it('accepts extra routers as a list too, and the public listener serves none of them', async () => {
    const internal = await serve(createInternalApp(deps, { extraRouters: [Router().use('/codec', codecLike())] }));
    expect((await fetch(`${internal}/codec/decode`, { method: 'POST' })).status).toBe(200);
    const pub = await serve(createPublicApp(deps));
    for (const path of ['/codec/decode', '/applications', '/metrics']) {
      expect({ path, status: (await fetch(`${pub}${path}`, { method: 'POST' })).status }).toEqual({
        path,
        status: 404,
      });
    }
    // Its own /readyz takes GET only: another method is a 405 naming the allowed ones.
    const posted = await fetch(`${pub}/readyz`, { method: 'POST' });
    expect(posted.status).toBe(405);
    expect(posted.headers.get('allow')).toBe('GET, HEAD');
    expect((await fetch(`${pub}/healthz`)).status).toBe(200);
    // Its own readiness, for the load balancer in front of it: the drain state only (GET; no Temporal call).
    expect(await (await fetch(`${pub}/readyz`)).json()).toEqual({ status: 'ready' });
  });
});

/**
 * startListeners as `npm start` (role `all`) and `npm run api` wire them from the environment, on real Temporal: the
 * public listener on every interface; the internal one on loopback for `npm start` unless INTERNAL_HOST says
 * otherwise, on every interface for `npm run api`. 127.0.0.2 is loopback too, but a socket bound to 127.0.0.1 does not
 * take its connections (Linux), so it tells a loopback bind from a wildcard one on any machine; the machine's own
 * non-loopback address, when it has one, is what another host would use.
 */
describe('startListeners: where each listener binds', () => {
  let t: TemporalTestContext;
  beforeAll(async () => {
    t = await connectTestTemporal();
  });
  afterAll(async () => t?.close());

  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  const reachable = async (host: string, url: string): Promise<boolean> => {
    const port = new URL(url).port;
    try {
      return (await fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(5_000) })).status === 200;
    } catch {
      return false;
    }
  };

  async function start(env: Record<string, string>, role: 'all' | 'api') {
    const config = loadConfig({ PORT: '0', INTERNAL_PORT: '0', SHUTDOWN_DRAIN_DELAY: '0', ...env }, { role });
    const steps: (() => Promise<void> | void)[] = [];
    const listeners = await startListeners({
      config,
      client: t.client,
      connection: t.connection,
      logger: pino({ level: 'silent' }),
      onShutdown: (step) => void steps.push(step),
      payloadCodec: createPayloadCodec(config.payloadEncryption.keys),
    });
    return { listeners, stop: () => listeners.stop() };
  }

  it.each([
    ['npm start: the internal listener on loopback only', {}, 'all', false],
    ['npm start with INTERNAL_HOST=0.0.0.0: every interface', { INTERNAL_HOST: '0.0.0.0' }, 'all', true],
    ['npm run api: every interface (a network boundary of its own)', {}, 'api', true],
    ['npm run api with INTERNAL_HOST=127.0.0.1: loopback only', { INTERNAL_HOST: '127.0.0.1' }, 'api', false],
  ] as const)('%s; the public listener on every interface', async (_case, env, role, everywhere) => {
    const keys: Record<string, string> =
      role === 'api' ? { MERCHANT_API_KEYS: `shop:${MERCHANT_KEY}`, OPERATOR_API_KEYS: `ops:${KEY}` } : {};
    const { listeners, stop } = await start({ ...keys, ...env }, role);
    try {
      expect(await reachable('127.0.0.1', listeners.internalUrl)).toBe(true);
      expect(await reachable('127.0.0.1', listeners.publicUrl)).toBe(true);
      expect(await reachable('127.0.0.2', listeners.publicUrl)).toBe(true);
      expect(await reachable('127.0.0.2', listeners.internalUrl)).toBe(everywhere);
      if (external) {
        expect(await reachable(external, listeners.publicUrl)).toBe(true);
        expect(await reachable(external, listeners.internalUrl)).toBe(everywhere);
      }
    } finally {
      await stop();
    }
  });

  it('refuses an INTERNAL_HOST or WORKER_METRICS_HOST that is not an IP address, naming the variable', () => {
    for (const variable of ['INTERNAL_HOST', 'WORKER_METRICS_HOST'])
      expect(() => loadConfig({ [variable]: 'example.com' })).toThrow(new RegExp(`${variable}: must be an IP address`));
    expect(loadConfig({}).workerMetricsHost).toBe('127.0.0.1');
    expect(loadConfig({}, { role: 'worker' }).workerMetricsHost).toBe('0.0.0.0');
  });
});
