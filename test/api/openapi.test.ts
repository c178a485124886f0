/**
 * The OpenAPI document: valid OpenAPI 3.1 (a validator library), and in agreement with the Express routers of both
 * listeners (every route described, every operation routed, on the listener it names). Real answers are checked
 * against it in the stack tests (tools/harness/openapi.ts); here, the probes and the reference page on a real app.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Client } from '@temporalio/client';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createInternalApp, createPublicApp, type AppDeps } from '../../src/api/app';
import { listen, closeServer } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { createOpenApiDocument } from '../../src/api/openapi/document';
import { DOCS_ASSETS } from '../../src/api/resources/api-docs/schemas';
import { DOCS_CONTENT_SECURITY_POLICY } from '../../src/api/resources/api-docs/handlers';
import { codecRoutes } from '../../src/api/resources/codec/routes';
import { createPayloadCodec, payloadEncryptionKey } from '../../src/security/payload-codec';
import { answerProblems, expectMatchesOpenApi, recordOpenApiAnswers } from '../../tools/harness/openapi';
import { testMerchants } from '../helpers/merchants';

const VALIDATOR_CLI = join(__dirname, '../../node_modules/@seriousme/openapi-schema-validator/bin/validate-api-cli.js');

/**
 * @seriousme/openapi-schema-validator (the OpenAPI Initiative's JSON schemas for 2.0, 3.0 and 3.1, over ajv) is an
 * ES module, which jest's CommonJS runtime cannot load: its own CLI runs it in a child node process.
 */
function validateOpenApi(document: unknown): Promise<{ valid: boolean; errors?: unknown }> {
  const file = join(mkdtempSync(join(tmpdir(), 'openapi-')), 'openapi.json');
  writeFileSync(file, JSON.stringify(document));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [VALIDATOR_CLI, file], (err, stdout) => {
      try {
        resolve(JSON.parse(stdout) as { valid: boolean; errors?: unknown });
      } catch {
        reject(err ?? new Error(`validator printed no result: ${stdout}`));
      }
    });
  });
}

/** Apps built for their routers only (no route runs in the walk): the client is never called. */
const OPERATOR_KEY = 'o'.repeat(32);

function deps(checkTemporal: () => Promise<void> = () => Promise.resolve()): AppDeps {
  return {
    client: {} as Client,
    taskQueue: 'openapi-test',
    webhooks: { hashSecret: 'x'.repeat(32), securityHeader: '' },
    merchantApiKeys: [{ name: 'test', key: 'k'.repeat(32) }],
    operatorApiKeys: [{ name: 'ops', key: OPERATOR_KEY }],
    merchants: testMerchants([{ name: 'test' }]),
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    checkTemporal,
  };
}

/** The internal app as startListeners builds it: with the codec router. */
function internalApp(d: AppDeps): Express {
  const codec = codecRoutes({
    codec: createPayloadCodec([payloadEncryptionKey('k1', Buffer.alloc(32, 1))]),
    authenticate: (_req, _res, next) => next(),
    corsOrigins: [],
  });
  return createInternalApp(d, { extraRouters: [codec] });
}

interface RouterLayer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: RouterLayer[] };
  slash?: boolean;
  name?: string;
}

/** Every `METHOD path` an Express app routes, in OpenAPI's form (`/applications/{ref}`). */
function routesOf(app: Express): Set<string> {
  const found = new Set<string>();
  const walk = (stack: RouterLayer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const path of paths) {
          for (const method of Object.keys(layer.route.methods)) {
            if (method === '_all') throw new Error(`router.all on ${path}: describe each method instead`);
            found.add(`${method.toUpperCase()} ${path.replace(/:(\w+)/g, '{$1}')}`);
          }
        }
      } else if (layer.handle?.stack) {
        // A router mounted under a path would prefix its routes: this walk only knows routers mounted at the root.
        if (!layer.slash)
          throw new Error(`A router (${layer.name}) is mounted under a path: teach this walk its prefix`);
        walk(layer.handle.stack);
      }
    }
  };
  walk((app as unknown as { router: { stack: RouterLayer[] } }).router.stack);
  // The merchant console (docs/console.md) is HTML pages for people behind a session, not part of the API: not described.
  for (const route of found) if (/^[A-Z]+ \/console(\/|$)/.test(route)) found.delete(route);
  return found;
}

/** `METHOD path` of each operation the document gives to the listener. */
function operationsOf(listener: 'public' | 'internal'): Set<string> {
  const found = new Set<string>();
  for (const [path, item] of Object.entries(createOpenApiDocument().paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, { 'x-listener'?: string }>)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const on = operation['x-listener'];
      if (on === undefined) throw new Error(`${method.toUpperCase()} ${path} names no x-listener`);
      if (on === listener || on === 'both') found.add(`${method.toUpperCase()} ${path}`);
    }
  }
  return found;
}

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const document = createOpenApiDocument();
    expect(document.openapi).toBe('3.1.0');
    const result = await validateOpenApi(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('the validator refuses a broken document (the check above can fail)', async () => {
    const broken = JSON.parse(JSON.stringify(createOpenApiDocument()));
    broken.paths['/applications'].post.responses = 'none';
    expect((await validateOpenApi(broken)).valid).toBe(false);
  });

  it.each(['public', 'internal'] as const)('describes exactly the routes of the %s listener', (listener) => {
    const app = listener === 'public' ? createPublicApp(deps()) : internalApp(deps());
    const routes = [...routesOf(app)].sort();
    const operations = [...operationsOf(listener)].sort();
    expect(routes.length).toBeGreaterThan(1);
    // Both directions, named: a route without an operation, an operation without a route (or on the other listener).
    expect({ routesWithoutOperation: routes.filter((r) => !operations.includes(r)) }).toEqual({
      routesWithoutOperation: [],
    });
    expect({ operationsWithoutRoute: operations.filter((o) => !routes.includes(o)) }).toEqual({
      operationsWithoutRoute: [],
    });
  });

  it('the route walk sees a route added without a description', () => {
    const app = internalApp(deps());
    app.get('/applications/:ref/undocumented', (_req, res) => {
      res.end();
    });
    expect([...routesOf(app)].filter((r) => !operationsOf('internal').has(r))).toEqual([
      'GET /applications/{ref}/undocumented',
    ]);
  });

  it('every operation has an id, a tag, its security, and a JSON error body for each 4xx/5xx it declares', () => {
    const document = createOpenApiDocument();
    expect(Object.keys(document.components?.securitySchemes ?? {}).sort()).toEqual([
      'merchantApiKey',
      'operatorApiKey',
      'webhookSecurityHeader',
    ]);
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(document.paths ?? {})) {
      for (const [method, op] of Object.entries(item as Record<string, Record<string, unknown>>)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const where = `${method.toUpperCase()} ${path}`;
        expect({ where, id: typeof op.operationId }).toEqual({ where, id: 'string' });
        expect(ids.has(op.operationId as string)).toBe(false);
        ids.add(op.operationId as string);
        expect({ where, security: Array.isArray(op.security) }).toEqual({ where, security: true });
        const operatorRoute = path.startsWith('/codec') || path.startsWith('/operator/') || path === '/metrics';
        const facade =
          path.startsWith('/applications') ||
          path.startsWith('/consents') ||
          path.startsWith('/merchant/') ||
          path.startsWith('/callbacks/') ||
          operatorRoute;
        expect({ where, keyed: (op.security as object[]).length > 0 }).toEqual({
          where,
          keyed: facade || path === '/webhooks/accounts' || path === '/readyz',
        });
        if (facade) expect({ where, has401: '401' in (op.responses as object) }).toEqual({ where, has401: true });
        // Operator routes take an operator key (a merchant key answers 401); the facade a merchant key.
        if (facade)
          expect({ where, security: op.security }).toEqual({
            where,
            security: [operatorRoute ? { operatorApiKey: [] } : { merchantApiKey: [] }],
          });
        // Every operator route refuses a missing or non-operator key (401); /operator/audit has no 403 of its own.
        if (operatorRoute)
          expect({
            where,
            refuses:
              '401' in (op.responses as object) &&
              ('403' in (op.responses as object) ||
                path === '/operator/audit' ||
                path === '/operator/callbacks/undelivered'),
          }).toEqual({ where, refuses: true });
        // Readiness: open to probes (the status alone), its details to an operator key.
        if (path === '/readyz')
          expect({ where, security: op.security }).toEqual({ where, security: [{}, { operatorApiKey: [] }] });
      }
    }
  });

  it('answer checks find a wrong status, a wrong content type and a body that does not match', () => {
    const ok = {
      method: 'GET',
      path: '/healthz',
      status: 200,
      contentType: 'application/json',
      body: '{"status":"ok"}',
    };
    expect(answerProblems(ok)).toEqual([]);
    expect(answerProblems({ ...ok, status: 418 })[0]).toMatch(/status not documented/);
    expect(answerProblems({ ...ok, contentType: 'text/plain' })[0]).toMatch(
      /content type "text\/plain" not documented/,
    );
    expect(answerProblems({ ...ok, body: '{"status":"fine"}' })[0]).toMatch(/body\/status/);
    expect(answerProblems({ ...ok, method: 'DELETE' })[0]).toMatch(/no DELETE operation/);
    const application = {
      method: 'GET',
      path: '/applications/order-1',
      status: 200,
      contentType: 'application/json; charset=utf-8',
      body: JSON.stringify({
        merchantReference: 'order-1',
        financeApplicationId: null,
        status: null,
        phase: 'following',
        done: false,
        history: [],
      }),
    };
    expect(answerProblems(application)).toEqual([]);
    expect(
      answerProblems({ ...application, body: JSON.stringify({ merchantReference: 'order-1' }) }).length,
    ).toBeGreaterThan(0);
  });
});

it('the answer recorder catches an undocumented answer a server sends', async () => {
  const server = createServer((req, res) => {
    res.statusCode = req.url === '/healthz' ? 418 : 200;
    res.setHeader('content-type', 'application/json');
    res.end(req.url === '/readyz' ? '{"status":"maybe"}' : '{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const recorder = recordOpenApiAnswers(server);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await (await fetch(`${base}/healthz`)).text();
  await (await fetch(`${base}/readyz`)).text();
  await (await fetch(`${base}/not-a-route`)).text();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  expect(recorder.checked).toBe(2);
  expect(recorder.problems).toEqual([
    expect.stringMatching(/^GET \/healthz → 418: status not documented/),
    // Either answer of the two listeners' /readyz (Ready, ReceiverReady): each branch says why it does not match.
    'GET /readyz → 200: body must have required property \'temporal\' {"missingProperty":"temporal"}',
    'GET /readyz → 200: body/status must be equal to constant {"allowedValue":"ready"}',
    'GET /readyz → 200: body/status must be equal to constant {"allowedValue":"ready"}',
    'GET /readyz → 200: body must match a schema in anyOf {}',
    expect.stringMatching(/^GET \/not-a-route → 200: answered, but no operation/),
  ]);
});

describe('API description on the internal listener (real app over HTTP)', () => {
  let url: string;
  let close: () => Promise<void>;
  let ready = true;
  let recorder: ReturnType<typeof recordOpenApiAnswers>;
  beforeAll(async () => {
    const server = await listen(
      internalApp(deps(() => (ready ? Promise.resolve() : Promise.reject(new Error('Temporal is down (test)'))))),
      0,
      '127.0.0.1',
    );
    recorder = recordOpenApiAnswers(server);
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => closeServer(server, 1_000);
  });
  afterEach(() => recorder.expectAllMatched());
  afterAll(async () => close?.());

  it('GET /openapi.json without a key: the document, itself valid', async () => {
    const res = await fetch(`${url}/openapi.json`);
    expect(res.status).toBe(200);
    const document = (await expectMatchesOpenApi(res, 'GET', '/openapi.json')) as { openapi: string; paths: object };
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/applications', '/webhooks/accounts']));
    expect((await validateOpenApi(document)).valid).toBe(true);
  });

  it('docs/openapi.json is the document served at /openapi.json (else: npm run docs:openapi)', async () => {
    const served: unknown = await (await fetch(`${url}/openapi.json`)).json();
    const exported = JSON.parse(readFileSync(join(__dirname, '../../docs/openapi.json'), 'utf8')) as unknown;
    expect(exported).toEqual(served);
  });

  it('GET /docs without a key: a page whose scripts and styles come from this listener, under a CSP', async () => {
    const res = await fetch(`${url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(DOCS_CONTENT_SECURITY_POLICY);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await res.text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    expect(html).not.toMatch(/<script>[^<]/); // no inline script
    for (const ref of refs) {
      expect(ref.startsWith('/')).toBe(true); // same origin: nothing from a CDN
      const asset = await fetch(`${url}${ref}`);
      expect({ ref, status: asset.status }).toEqual({ ref, status: 200 });
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    const init = await (await fetch(`${url}/docs/init.js`)).text();
    expect(init).toContain("url: '/openapi.json'");
    expect(DOCS_ASSETS).toContain('swagger-ui-bundle.js');
  });

  it('an asset outside the allow-list is a JSON 404', async () => {
    const res = await fetch(`${url}/docs/assets/index.html`);
    expect(res.status).toBe(404);
    await expectMatchesOpenApi(res, 'GET', '/docs/assets/{file}');
  });

  it('probes and a keyed route answer as described (200, 503, 401)', async () => {
    const operator = { authorization: `Bearer ${OPERATOR_KEY}` };
    await expectMatchesOpenApi(await fetch(`${url}/healthz`), 'GET');
    await expectMatchesOpenApi(await fetch(`${url}/readyz`), 'GET');
    await expectMatchesOpenApi(await fetch(`${url}/readyz`, { headers: operator }), 'GET');
    ready = false;
    const down = await fetch(`${url}/readyz`);
    expect(down.status).toBe(503);
    await expectMatchesOpenApi(down, 'GET');
    const downDetailed = await fetch(`${url}/readyz`, { headers: operator });
    expect(downDetailed.status).toBe(503);
    await expectMatchesOpenApi(downDetailed, 'GET');
    ready = true;
    const metrics = await fetch(`${url}/metrics`, { headers: operator });
    expect(metrics.status).toBe(200);
    await expectMatchesOpenApi(metrics, 'GET');
    const metricsWithoutKey = await fetch(`${url}/metrics`);
    expect(metricsWithoutKey.status).toBe(401);
    await expectMatchesOpenApi(metricsWithoutKey, 'GET');
    const unauthorized = await fetch(`${url}/applications/order-1`);
    expect(unauthorized.status).toBe(401);
    await expectMatchesOpenApi(unauthorized, 'GET', '/applications/{ref}');
    const badBody = await fetch(`${url}/codec/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"payloads": 1}',
    });
    expect(badBody.status).toBe(400);
    const encoded = await fetch(`${url}/codec/encode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: 'e30=' }],
      }),
    });
    expect(encoded.status).toBe(200);
    expect(recorder.checked).toBeGreaterThanOrEqual(7);
  });
});
