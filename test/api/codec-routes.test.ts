import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { defaultPayloadConverter } from '@temporalio/common';
import express from 'express';
import pino from 'pino';
import { authenticateOperator } from '../../src/api/authenticate';
import { FailedAuthentications } from '../../src/api/auth-failures';
import { errorHandler, HttpError } from '../../src/api/problem-details';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { codecRoutes } from '../../src/api/resources/codec/routes';
import { CODEC_ALLOWED_HEADERS } from '../../src/api/resources/codec/handlers';
import { createPayloadCodec, payloadEncryptionKey } from '../../src/security/payload-codec';

/**
 * The codec endpoint over real HTTP, as the Temporal Web UI (CORS, preflight, credentials) and the CLI
 * (`--codec-endpoint`, `--codec-auth`) call it, behind the operator keys (authenticateOperator).
 */
const OPERATOR_KEY = 'operator-key-0123456789-abcdef';
const MERCHANT_KEY = 'merchant-key-0123456789-abcdef';
const UI_ORIGIN = 'http://localhost:8233';
const metrics = createMetrics();
const bearer = authenticateOperator({
  operatorApiKeys: [{ name: 'ops', key: OPERATOR_KEY }],
  merchantApiKeys: [{ name: 'shop', key: MERCHANT_KEY }],
  metrics,
  // Wrong keys from this one address on purpose: the limit itself is test/api/failed-authentications.test.ts's.
  authFailures: new FailedAuthentications({ metrics, attempts: 1_000 }),
});

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
const jsonPayload = (value: unknown) => {
  const p = defaultPayloadConverter.toPayload(value);
  return {
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
    data: b64(p.data ?? new Uint8Array()),
  };
};
const valueOf = (p: { metadata: Record<string, string>; data: string }) =>
  defaultPayloadConverter.fromPayload({
    metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(p.data, 'base64'),
  });

describe('codec endpoint: POST /codec/decode and /codec/encode', () => {
  const current = payloadEncryptionKey('2026-01', randomBytes(32));
  const old = payloadEncryptionKey('2025-07', randomBytes(32));
  const codec = createPayloadCodec([current, old]);
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const app = express();
    app.use(codecRoutes({ codec, authenticate: bearer, corsOrigins: [UI_ORIGIN], bodyLimitBytes: 64 * 1024 }));
    app.use((req, _res, next) => next(new HttpError(404, `No route for ${req.method} ${req.path}`)));
    app.use(errorHandler(pino({ level: 'silent' })));
    server = await listen(app, 0, '127.0.0.1');
    url = `http://127.0.0.1:${boundPort(server)}`;
  });
  afterAll(() => closeServer(server, 1_000));

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${OPERATOR_KEY}`,
        'content-type': 'application/json',
        'x-namespace': 'default',
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('encodes, then decodes, payloads in the remote codec protocol shape', async () => {
    const marker = `customer-${randomBytes(4).toString('hex')}`;
    const encoded = await post('/codec/encode', { payloads: [jsonPayload({ name: marker }), jsonPayload('x')] });
    expect(encoded.status).toBe(200);
    const { payloads } = (await encoded.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(payloads).toHaveLength(2);
    for (const p of payloads) {
      expect(p.metadata).toEqual({ encoding: b64('binary/encrypted'), 'encryption-key-id': b64('2026-01') });
      expect(Buffer.from(p.data, 'base64').toString('latin1')).not.toContain(marker);
    }
    const decoded = await post('/codec/decode', { payloads });
    expect(decoded.status).toBe(200);
    const body = (await decoded.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(body.payloads.map(valueOf)).toEqual([{ name: marker }, 'x']);
    expect(body.payloads[0]!.metadata.encoding).toBe(b64('json/plain'));
  });

  it("accepts no payloads as the Temporal CLI sends them (`{}`, proto3 JSON's empty list) and answers none", async () => {
    for (const operation of ['encode', 'decode']) {
      for (const body of [{}, { payloads: null }, { payloads: [] }]) {
        const res = await post(`/codec/${operation}`, body);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ payloads: [] });
      }
    }
  });

  it('decodes payloads written under the old key (rotation), and passes unencrypted ones through as they are', async () => {
    const [underOld] = await createPayloadCodec([old]).encode([defaultPayloadConverter.toPayload({ v: 'old' })]);
    const plain = jsonPayload({ v: 'plain' });
    const res = await post('/codec/decode', {
      payloads: [
        {
          metadata: { encoding: b64(underOld!.metadata!.encoding!), 'encryption-key-id': b64('2025-07') },
          data: b64(underOld!.data!),
        },
        plain,
      ],
    });
    expect(res.status).toBe(200);
    const { payloads } = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(payloads.map(valueOf)).toEqual([{ v: 'old' }, { v: 'plain' }]);
    expect(payloads[1]).toEqual(plain);
  });

  it('accepts payloads without data or metadata (proto3 JSON omits empty fields) and an empty list', async () => {
    expect(await (await post('/codec/decode', { payloads: [] })).json()).toEqual({ payloads: [] });
    const res = await post('/codec/decode', { payloads: [{ metadata: { encoding: b64('binary/null') } }, {}] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      payloads: [
        { metadata: { encoding: b64('binary/null') }, data: '' },
        { metadata: {}, data: '' },
      ],
    });
  });

  it('answers 400 naming the key id for a payload under a key it does not have, and 400 for altered data', async () => {
    const [foreign] = await createPayloadCodec([payloadEncryptionKey('retired', randomBytes(32))]).encode([
      defaultPayloadConverter.toPayload('secret'),
    ]);
    const asJson = (p: typeof foreign) => ({
      metadata: Object.fromEntries(Object.entries(p!.metadata!).map(([k, v]) => [k, b64(v)])),
      data: b64(p!.data!),
    });
    const unknown = await post('/codec/decode', { payloads: [asJson(foreign)] });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({
      error: 'bad_request',
      message: expect.stringMatching(/encryption key id "retired" is not in PAYLOAD_ENCRYPTION_KEYS/),
    });

    const [mine] = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
    const data = Buffer.from(mine!.data!);
    data[data.length - 1] = data[data.length - 1]! ^ 0xff;
    const altered = await post('/codec/decode', { payloads: [{ ...asJson(mine), data: b64(data) }] });
    expect(altered.status).toBe(400);
    expect(((await altered.json()) as { message: string }).message).toMatch(/key id "2026-01": authentication failed/);
  });

  describe('authentication', () => {
    it.each([
      ['no Authorization', {}, 'Missing API key: send Authorization: Bearer <key>'],
      ['a wrong key', { authorization: 'Bearer wrong' }, 'Invalid API key'],
      [
        'a key without the scheme',
        { authorization: OPERATOR_KEY },
        'Missing API key: send Authorization: Bearer <key>',
      ],
    ])('answers 401 with %s', async (_case, headers, message) => {
      const res = await fetch(`${url}/codec/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: '{"payloads":[]}',
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="paylater"/);
      expect(await res.json()).toMatchObject({ error: 'unauthorized', message });
    });

    it('answers a merchant key as an unknown key (401), on both operations, and encodes or decodes nothing', async () => {
      const [sealed] = await codec.encode([defaultPayloadConverter.toPayload('customer secret')]);
      const payload = {
        metadata: Object.fromEntries(Object.entries(sealed!.metadata!).map(([k, v]) => [k, b64(v)])),
        data: b64(sealed!.data!),
      };
      for (const path of ['/codec/decode', '/codec/encode']) {
        const res = await post(path, { payloads: [payload] }, { authorization: `Bearer ${MERCHANT_KEY}` });
        const unknown = await post(path, { payloads: [payload] }, { authorization: 'Bearer nobody-nobody-nobody' });
        expect(res.status).toBe(401);
        const body = await res.text();
        // Nothing tells that the key is a merchant's: the answer of a key that is no one's.
        expect(body).toBe(await unknown.text());
        expect(res.headers.get('www-authenticate')).toBe(unknown.headers.get('www-authenticate'));
        expect(JSON.parse(body)).toMatchObject({ error: 'unauthorized', message: 'Invalid API key' });
        expect(body).not.toContain('customer secret');
        expect(body).not.toContain(MERCHANT_KEY);
        // The empty body the CLI sends is no way around it.
        expect((await post(path, {}, { authorization: `Bearer ${MERCHANT_KEY}` })).status).toBe(401);
      }
      // The same payload with the operator key: decoded.
      const ok = await post('/codec/decode', { payloads: [payload] });
      expect(
        valueOf(((await ok.json()) as { payloads: { metadata: Record<string, string>; data: string }[] }).payloads[0]!),
      ).toBe('customer secret');
    });

    it('is not asked of anything outside /codec (the router only guards its own paths)', async () => {
      const res = await fetch(`${url}/elsewhere`);
      expect(res.status).toBe(404);
    });
  });

  describe('CORS for the Web UI', () => {
    it('answers the preflight from an allowed origin without credentials: 204 with the headers the UI needs', async () => {
      const res = await fetch(`${url}/codec/decode`, {
        method: 'OPTIONS',
        headers: {
          origin: UI_ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-namespace',
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      expect(res.headers.get('access-control-allow-headers')).toBe(CODEC_ALLOWED_HEADERS);
      expect(CODEC_ALLOWED_HEADERS).toBe('Authorization, Content-Type, X-Namespace');
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('vary')).toMatch(/Origin/);
    });

    it('allows the origin on the answers themselves, errors included, so the UI can read them', async () => {
      const ok = await post('/codec/decode', { payloads: [] }, { origin: UI_ORIGIN });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
      expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
      const unauthorized = await post('/codec/decode', { payloads: [] }, { origin: UI_ORIGIN, authorization: '' });
      expect(unauthorized.status).toBe(401);
      expect(unauthorized.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    });

    it('refuses any other origin, preflight or not, and allows no CORS for it', async () => {
      const evil = 'https://evil.example';
      const preflight = await fetch(`${url}/codec/decode`, {
        method: 'OPTIONS',
        headers: { origin: evil, 'access-control-request-method': 'POST' },
      });
      expect(preflight.status).toBe(403);
      expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
      const res = await post('/codec/decode', { payloads: [] }, { origin: evil });
      expect(res.status).toBe(403);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(await res.json()).toMatchObject({ error: 'forbidden', message: expect.stringContaining(evil) });
    });
  });

  describe('bad bodies: a JSON 4xx, never a 500', () => {
    it.each<{ case: string; body: string; headers: Record<string, string>; status: number }>([
      { case: 'not JSON', body: '{"payloads": [', headers: {}, status: 400 },
      { case: 'an empty body', body: '', headers: {}, status: 400 },
      { case: 'JSON null', body: 'null', headers: {}, status: 400 },
      { case: 'a list', body: '[]', headers: {}, status: 400 },
      { case: 'payloads not a list', body: '{"payloads": {"data": ""}}', headers: {}, status: 400 },
      { case: 'a payload that is not an object', body: '{"payloads": [42]}', headers: {}, status: 400 },
      { case: 'data not base64', body: '{"payloads": [{"data": "not base64!"}]}', headers: {}, status: 400 },
      { case: 'data not a string', body: '{"payloads": [{"data": 12}]}', headers: {}, status: 400 },
      {
        case: 'a metadata value not a string',
        body: '{"payloads": [{"metadata": {"encoding": 1}}]}',
        headers: {},
        status: 400,
      },
      { case: 'metadata not an object', body: '{"payloads": [{"metadata": "json/plain"}]}', headers: {}, status: 400 },
      { case: 'a text/plain body', body: '{"payloads": []}', headers: { 'content-type': 'text/plain' }, status: 415 },
      { case: 'no content type', body: '{"payloads": []}', headers: { 'content-type': '' }, status: 415 },
      {
        case: 'a latin-1 charset',
        body: '{"payloads": []}',
        headers: { 'content-type': 'application/json; charset=latin1' },
        status: 415,
      },
      {
        case: 'an unknown content encoding',
        body: '{"payloads": []}',
        headers: { 'content-encoding': 'zstd-ish' },
        status: 415,
      },
      {
        case: 'a body over the limit',
        body: JSON.stringify({ payloads: [{ data: 'A'.repeat(80 * 1024) }] }),
        headers: {},
        status: 413,
      },
    ])('$case → $status', async ({ body, headers, status }) => {
      for (const path of ['/codec/decode', '/codec/encode']) {
        const res = await post(path, body, headers);
        expect(res.status).toBe(status);
        const json = (await res.json()) as { error: string; message: string };
        expect(json.message).toEqual(expect.any(String));
      }
    });

    it('accepts application/json with a utf-8 charset', async () => {
      const res = await post('/codec/decode', { payloads: [] }, { 'content-type': 'application/json; charset=utf-8' });
      expect(res.status).toBe(200);
    });
  });
});
