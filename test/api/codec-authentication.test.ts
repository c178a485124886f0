import { randomBytes } from 'node:crypto';
import express from 'express';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { appDepsFromConfig, codecAuthentication, startListeners, type RunningListeners } from '../../src/api/listeners';
import type { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { defaultPayloadConverter } from '@temporalio/common';
import { createPayloadCodec } from '../../src/security/payload-codec';
import { connectTestTemporal, type TemporalTestContext } from '../helpers/temporal';

/**
 * Who may decode at /codec, as startListeners wires it from the environment: an operator key, whatever the Origin; a
 * merchant key never (401, as a key that is no one's); the Web UI's Origin alone never, not even on the embedded stack's development keys (anyone
 * can send that header). `npm start`'s Web UI decodes through its own gateway on 127.0.0.1 (below).
 */
describe('codecAuthentication', () => {
  async function answers(env: Record<string, string>, headers: Record<string, string>): Promise<number> {
    const config = loadConfig(env);
    const deps = appDepsFromConfig({
      config,
      client: {} as Client,
      connection: {} as Connection,
      logger: pino({ level: 'silent' }),
    });
    const app = express();
    app.post('/codec/decode', codecAuthentication(config, deps), (_req, res) => void res.status(200).end());
    app.use(
      (err: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(err.status ?? 500).end(),
    );
    const server = await listen(app, 0, '127.0.0.1');
    try {
      const res = await fetch(`http://127.0.0.1:${boundPort(server)}/codec/decode`, { method: 'POST', headers });
      return res.status;
    } finally {
      await closeServer(server, 1_000);
    }
  }
  const ui = { origin: 'http://localhost:8233' };
  const merchantKey = 'm'.repeat(30);
  const operatorKey = 'o'.repeat(30);
  const merchants = { MERCHANT_API_KEYS: `shop:${merchantKey}` };
  const operators = { OPERATOR_API_KEYS: `ops:${operatorKey}` };
  const realPayloadKeys = { PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` };

  it("lets no one through on the Web UI's Origin alone, on the embedded stack's development keys too", async () => {
    // The embedded stack's defaults: the public development payload key, the operator key generated for the run.
    expect(await answers(merchants, ui)).toBe(401);
    expect(await answers(merchants, { origin: 'http://127.0.0.1:8233' })).toBe(401);
    expect(await answers(merchants, { origin: 'http://evil.example' })).toBe(401);
    expect(await answers(merchants, {})).toBe(401);
    // A key sent from the UI's origin is checked as any other: a merchant's is refused.
    expect(await answers(merchants, { ...ui, authorization: `Bearer ${merchantKey}` })).toBe(401);
    expect(await answers({ ...merchants, ...realPayloadKeys }, ui)).toBe(401);
    expect(await answers({ ...merchants, ...operators }, ui)).toBe(401);
  });

  it('takes an operator key, and refuses a merchant key, a wrong or a missing key with 401', async () => {
    const env = { ...merchants, ...operators, ...realPayloadKeys };
    expect(await answers(env, { authorization: `Bearer ${operatorKey}` })).toBe(200);
    expect(await answers(env, { ...ui, authorization: `Bearer ${operatorKey}` })).toBe(200);
    expect(await answers(env, { authorization: `Bearer ${merchantKey}` })).toBe(401);
    expect(await answers(env, { authorization: 'Bearer wrong-key-wrong-key-wrong' })).toBe(401);
    expect(await answers(env, {})).toBe(401);
  });

  it('counts each outcome by the operator key name, never a key', async () => {
    const config = loadConfig({ ...merchants, ...operators });
    const deps = appDepsFromConfig({
      config,
      client: {} as Client,
      connection: {} as Connection,
      logger: pino({ level: 'silent' }),
    });
    const app = express();
    app.post('/codec/decode', codecAuthentication(config, deps), (_req, res) => void res.status(200).end());
    app.use(
      (_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(499).end(),
    );
    const server = await listen(app, 0, '127.0.0.1');
    try {
      for (const authorization of [
        `Bearer ${operatorKey}`,
        `Bearer ${merchantKey}`,
        'Bearer nobody-nobody-nobody',
        undefined,
      ])
        await fetch(`http://127.0.0.1:${boundPort(server)}/codec/decode`, {
          method: 'POST',
          headers: authorization ? { authorization } : {},
        });
    } finally {
      await closeServer(server, 1_000);
    }
    const text = await deps.metrics.registry.metrics();
    for (const line of [
      'paylater_operator_api_requests_total{operator="ops",outcome="accepted"} 1',
      'paylater_operator_api_requests_total{operator="none",outcome="merchant_key"} 1',
      'paylater_operator_api_requests_total{operator="none",outcome="wrong"} 1',
      'paylater_operator_api_requests_total{operator="none",outcome="missing"} 1',
    ])
      expect(text).toContain(line);
    expect(text).not.toContain(operatorKey);
    expect(text).not.toContain(merchantKey);
    // The merchant facade's counter is not touched by operator routes.
    expect(text).not.toMatch(/^paylater_merchant_api_requests_total\{/m);
  });
});

/**
 * `npm start`'s Web UI decodes through a gateway of its own (src/api/ui-codec-gateway.ts), started by startListeners
 * beside the two listeners (real Temporal for the API's client): on 127.0.0.1 only, the two codec routes alone, as the
 * operator `web-ui`, with CORS for the UI's origins.
 */
describe("the embedded Web UI's codec gateway", () => {
  let t: TemporalTestContext;
  let listeners: RunningListeners;
  let config: ReturnType<typeof loadConfig>;
  beforeAll(async () => {
    t = await connectTestTemporal();
    config = loadConfig({ PORT: '0', INTERNAL_PORT: '0' });
    listeners = await startListeners({
      config,
      client: t.client,
      connection: t.connection,
      logger: pino({ level: 'silent' }),
      onShutdown: () => undefined,
      payloadCodec: createPayloadCodec(config.payloadEncryption.keys),
      uiCodecGatewayPort: 0,
    });
  });
  afterAll(async () => {
    await listeners?.stop();
    await t?.close();
  });

  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  async function encrypted(marker: string) {
    const codec = createPayloadCodec(config.payloadEncryption.keys);
    const [payload] = await codec.encode([defaultPayloadConverter.toPayload({ marker })]);
    return {
      metadata: Object.fromEntries(Object.entries(payload!.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
      data: b64(payload!.data ?? new Uint8Array()),
    };
  }
  /** As the Web UI's browser code calls it: JSON, X-Namespace, from the UI's origin, no Authorization. */
  const asTheUi = (url: string, body: unknown, origin = config.codec.corsOrigins[0]!) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin },
      body: JSON.stringify(body),
    });

  it('decodes for the UI without a key, where the internal listener refuses the same request', async () => {
    const marker = `ui-gateway-${randomBytes(8).toString('hex')}`;
    const body = { payloads: [await encrypted(marker)] };
    expect((await asTheUi(`${listeners.internalUrl}/codec/decode`, body)).status).toBe(401);
    const res = await asTheUi(`${listeners.uiCodecUrl!}/decode`, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(config.codec.corsOrigins[0]);
    const { payloads } = (await res.json()) as { payloads: { data: string }[] };
    expect(Buffer.from(payloads[0]!.data, 'base64').toString()).toContain(marker);
    // Encode too (the UI's signal and start forms); another origin is refused; the preflight answered.
    expect((await asTheUi(`${listeners.uiCodecUrl!}/encode`, { payloads: [] })).status).toBe(200);
    expect((await asTheUi(`${listeners.uiCodecUrl!}/decode`, body, 'http://evil.example')).status).toBe(403);
    const preflight = await fetch(`${listeners.uiCodecUrl!}/decode`, {
      method: 'OPTIONS',
      headers: { origin: config.codec.corsOrigins[0]!, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
  });

  it('serves nothing else, on loopback only, and counts its decodes as the operator web-ui', async () => {
    const base = new URL(listeners.uiCodecUrl!).origin;
    for (const path of ['/', '/readyz', '/metrics', '/applications', '/openapi.json', '/console'])
      expect({ path, status: (await fetch(`${base}${path}`)).status }).toEqual({ path, status: 404 });
    const port = new URL(base).port;
    await expect(fetch(`http://127.0.0.2:${port}/codec/decode`, { method: 'POST' })).rejects.toThrow();
    const metrics = await fetch(`${listeners.internalUrl}/metrics`, {
      headers: { authorization: `Bearer ${config.operatorApiKeys.keys[0]!.key}` },
    });
    expect(await metrics.text()).toMatch(
      /^paylater_operator_api_requests_total\{operator="web-ui",outcome="accepted"\} [1-9]/m,
    );
  });
});
