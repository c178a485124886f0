import { randomBytes } from 'node:crypto';
import express from 'express';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { appDepsFromConfig, codecAuthentication } from '../../src/api/listeners';
import type { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { loadConfig } from '../../src/config';

/**
 * Who may decode at /codec, as startListeners wires it from the environment: an operator key always; a merchant key
 * never (401, as a key that is no one's); the embedded Web UI's origin without a key only with the public development payload key and the
 * development operator key of the run.
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

  it('lets the embedded Web UI through only with the development payload key and the generated operator key', async () => {
    expect(await answers(merchants, ui)).toBe(200);
    expect(await answers(merchants, { origin: 'http://evil.example' })).toBe(401);
    expect(await answers(merchants, {})).toBe(401);
    // A key sent from the UI's origin is checked as any other: a merchant's is refused.
    expect(await answers(merchants, { ...ui, authorization: `Bearer ${merchantKey}` })).toBe(401);
    // Real payload keys, or operator keys chosen: the UI's origin alone is not enough.
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
