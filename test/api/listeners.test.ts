/**
 * The two app factories without Temporal: what each listener serves, and the internal app's extension point for
 * routers written elsewhere (the codec endpoint), with the exported `authenticate` in front.
 */
import { Router } from 'express';
import type { Server } from 'node:http';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { authenticate, createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { testMerchants } from '../helpers/merchants';

const KEY = 'listeners-test-key-0123456789abcdef';

describe('createPublicApp and createInternalApp', () => {
  const servers: Server[] = [];
  const deps: AppDeps = {
    client: {} as Client,
    taskQueue: 'unused',
    webhooks: { hashSecret: 'x'.repeat(32), securityHeader: '' },
    merchantApiKeys: [{ name: 'ops', key: KEY }],
    merchants: testMerchants([{ name: 'ops' }]),
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

  /** A stand-in for the codec router (mounted at /codec): POST /decode echoes the merchant's name. */
  const codecLike = () =>
    Router().post('/decode', (_req, res) => {
      res.json({ decodedFor: res.locals.merchant as string });
    });

  it('mounts extra routers on the internal listener, behind authenticate when the caller puts it in front', async () => {
    const internal = await serve(
      createInternalApp(deps, {
        extraRouters: (d) => [Router().use('/codec', authenticate(d), codecLike())],
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
    // Probes stay open; the facade needs the key before anything else is looked at.
    expect((await fetch(`${internal}/readyz`)).status).toBe(200);
    expect((await fetch(`${internal}/applications/x`)).status).toBe(401);
  });

  it('accepts extra routers as a list too, and the public listener serves none of them', async () => {
    const internal = await serve(createInternalApp(deps, { extraRouters: [Router().use('/codec', codecLike())] }));
    expect((await fetch(`${internal}/codec/decode`, { method: 'POST' })).status).toBe(200);
    const pub = await serve(createPublicApp(deps));
    for (const path of ['/codec/decode', '/applications', '/readyz', '/metrics']) {
      expect({ path, status: (await fetch(`${pub}${path}`, { method: 'POST' })).status }).toEqual({
        path,
        status: 404,
      });
    }
    expect((await fetch(`${pub}/healthz`)).status).toBe(200);
  });
});
