import { randomBytes } from 'node:crypto';
import express from 'express';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { codecAuthentication } from '../../src/api/listeners';
import type { AppDeps } from '../../src/api/app';
import { loadConfig } from '../../src/config';

/** Who may decode at /codec: a key always; the embedded Web UI's origin only with the public development key. */
describe('codecAuthentication', () => {
  async function answers(env: Record<string, string>, headers: Record<string, string>): Promise<number> {
    const config = loadConfig(env);
    const deps = { merchantApiKeys: config.merchantApiKeys.keys, metrics: createMetrics() } as unknown as AppDeps;
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
  const key = `ops:${'k'.repeat(30)}`;

  it('lets the embedded Web UI through only while the public development key is in use', async () => {
    expect(await answers({ MERCHANT_API_KEYS: key }, ui)).toBe(200);
    expect(await answers({ MERCHANT_API_KEYS: key }, { origin: 'http://evil.example' })).toBe(401);
    expect(await answers({ MERCHANT_API_KEYS: key }, {})).toBe(401);
    // Real payload keys: the UI's origin alone is not enough.
    const real = { MERCHANT_API_KEYS: key, PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` };
    expect(await answers(real, ui)).toBe(401);
    expect(await answers(real, { authorization: `Bearer ${'k'.repeat(30)}` })).toBe(200);
    expect(await answers(real, { ...ui, authorization: 'Bearer wrong-key-wrong-key-wrong' })).toBe(401);
  });
});
