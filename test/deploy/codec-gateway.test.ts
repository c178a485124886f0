import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import express from 'express';
import pino from 'pino';
import { errorHandler, HttpError } from '../../src/api/problem-details';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { appDepsFromConfig, codecAuthentication } from '../../src/api/listeners';
import { codecRoutes } from '../../src/api/resources/codec/routes';
import { loadConfig } from '../../src/config';
import { freeLoopbackPort } from '../../src/temporal/free-port';
import { createPayloadCodec } from '../../src/security/payload-codec';
import { executable } from '../../src/temporal/binaries';
import { renderCompose } from '../helpers/compose';

/**
 * The Web UI's codec gateway (deploy/codec-gateway/default.conf.template, the codec-gateway service of
 * docker-compose.yml): the UI cannot send an operator key, so the gateway adds one. Statically: the template uses the
 * service's variables only and routes the two codec paths alone. With nginx installed (NGINX_PATH, PATH or
 * /usr/sbin/nginx; not part of the toolchain, so skipped without it): the template rendered as the nginx image's
 * entrypoint renders it, in front of the real codec routes configured from compose's own API environment, answers
 * as the browser needs and serves nothing else.
 */
const root = join(__dirname, '..', '..');
const template = readFileSync(join(root, 'deploy', 'codec-gateway', 'default.conf.template'), 'utf8');
const UI_KEY = 'u'.repeat(48);
const MERCHANT_KEY = 'k'.repeat(32);
const { services } = renderCompose(join(root, 'docker-compose.yml'), {
  WEBHOOK_HASH_SECRET: 'h'.repeat(48),
  WEBHOOK_SECURITY_HEADER: `Basic ${'s'.repeat(44)}`,
  POSTGRES_PASSWORD: 'p'.repeat(48),
  WEB_UI_OPERATOR_KEY: UI_KEY,
  PROMETHEUS_OPERATOR_KEY: 'm'.repeat(48),
  BANK_CLIENT_SECRET: 'sandbox-secret',
  MERCHANT_API_KEYS: `shop:${MERCHANT_KEY}`,
  OPERATOR_API_KEYS: `ops:${'o'.repeat(32)}`,
  PAYLOAD_ENCRYPTION_KEYS: `key-1:${Buffer.alloc(32, 7).toString('base64')}`,
}).compose;
const gateway = services['codec-gateway']!;
const gatewayEnv = gateway.environment!;
const filter = gatewayEnv.NGINX_ENVSUBST_FILTER!;

/**
 * As the nginx image's 20-envsubst-on-templates.sh: `$NAME` and `${NAME}` whose name starts with the filter and is
 * set are replaced; everything else (nginx's own `$variables`) is left as it is.
 */
const renderTemplate = (text: string, env: Record<string, string>) =>
  text.replace(
    new RegExp(`\\$(?:\\{(${filter}\\w*)\\}|(${filter}\\w*))`, 'g'),
    (whole, braced?: string, bare?: string) => env[(braced ?? bare)!] ?? whole,
  );

/** The config without its comments. */
const directives = template.replace(/#.*$/gm, '');

describe('codec gateway template', () => {
  it("uses the service's variables only, all of them set by compose", () => {
    expect(filter).toBe('CODEC_GATEWAY_');
    const used = [...directives.matchAll(/\$\{?([A-Za-z_]\w*)/g)].map((m) => m[1]!);
    const ours = [...new Set(used.filter((name) => name.startsWith(filter)))].sort();
    expect(ours).toEqual(['CODEC_GATEWAY_OPERATOR_KEY', 'CODEC_GATEWAY_RESOLVER', 'CODEC_GATEWAY_UPSTREAM']);
    for (const name of ours) expect({ name, set: Boolean(gatewayEnv[name]) }).toEqual({ name, set: true });
    // The rest are nginx's own variables, which the entrypoint leaves alone.
    expect(used.filter((name) => !name.startsWith(filter))).toEqual(['codec_upstream', 'codec_upstream']);
    expect(gateway.volumes).toContain(
      './deploy/codec-gateway/default.conf.template:/etc/nginx/templates/default.conf.template:ro',
    );
  });

  it('routes the two codec paths, with the operator key in place of any Authorization, and nothing else', () => {
    const locations = [...directives.matchAll(/^\s*location\s+([^{]+?)\s*\{/gm)].map((m) => m[1]);
    expect(locations).toEqual(['~ ^/codec/(decode|encode)$', '/']);
    expect(directives).toContain('proxy_set_header Authorization "Bearer ${CODEC_GATEWAY_OPERATOR_KEY}";');
    expect(directives).toMatch(/location \/ \{\s*return 404;\s*\}/);
    expect(directives).toMatch(/listen 8080;/);
    expect(gateway.ports).toEqual([`127.0.0.1:8234:8080`]);
  });
});

function findNginx(): string | undefined {
  for (const c of [process.env.NGINX_PATH, '/usr/sbin/nginx']) if (c && executable(c)) return c;
  const found = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : undefined;
}
const nginx = findNginx();
const withNginx = nginx ? describe : describe.skip;

withNginx('codec gateway in front of the codec routes (nginx)', () => {
  const apiConfig = loadConfig(services.api!.environment, { role: 'api' });
  const codec = createPayloadCodec(apiConfig.payloadEncryption.keys);
  const uiOrigin = new URL(services['temporal-ui']!.environment!.TEMPORAL_CORS_ORIGINS!).origin;
  const dir = mkdtempSync(join(tmpdir(), 'paylater-codec-gateway-'));
  let upstream: Server;
  let upstreamUrl: string;
  let proc: ChildProcess;
  let output = '';
  let url: string;

  beforeAll(async () => {
    // The API's codec routes as startListeners mounts them, from compose's API environment.
    const deps = appDepsFromConfig({
      config: apiConfig,
      client: {} as Client,
      connection: {} as Connection,
      logger: pino({ level: 'silent' }),
    });
    const app = express();
    app.use(
      codecRoutes({
        codec,
        authenticate: codecAuthentication(apiConfig, deps),
        corsOrigins: apiConfig.codec.corsOrigins,
      }),
    );
    app.use((req, _res, next) => next(new HttpError(404, `No route for ${req.method} ${req.path}`)));
    app.use(errorHandler(pino({ level: 'silent' })));
    upstream = await listen(app, 0, '127.0.0.1');
    upstreamUrl = `http://127.0.0.1:${boundPort(upstream)}`;

    // The template rendered with compose's values, but the upstream and the port local.
    const port = await freeLoopbackPort();
    const rendered = renderTemplate(template, {
      ...gatewayEnv,
      CODEC_GATEWAY_UPSTREAM: upstreamUrl,
      CODEC_GATEWAY_RESOLVER: '127.0.0.1',
    });
    expect(rendered).not.toContain('${');
    expect(rendered).toContain(`"Bearer ${UI_KEY}"`);
    mkdirSync(join(dir, 'conf.d'));
    mkdirSync(join(dir, 'tmp'));
    writeFileSync(join(dir, 'conf.d', 'default.conf'), rendered.replace('listen 8080;', `listen 127.0.0.1:${port};`));
    // What the image's nginx.conf provides around conf.d, in a folder of our own.
    writeFileSync(
      join(dir, 'nginx.conf'),
      [
        process.getuid?.() === 0 ? 'user root root;' : '',
        'worker_processes 1;',
        `pid ${dir}/nginx.pid;`,
        'events {}',
        'http {',
        '  access_log off;',
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/tmp/${t};`),
        `  include ${dir}/conf.d/*.conf;`,
        '}',
      ].join('\n'),
    );
    proc = spawn(nginx!, ['-p', dir, '-e', 'stderr', '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`nginx exited ${proc.exitCode}: ${output}`);
      try {
        await fetch(`${url}/`);
        break;
      } catch (err) {
        if (i > 200) throw new Error(`nginx did not listen: ${String(err)} ${output}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }, 30_000);

  afterAll(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    if (upstream) await closeServer(upstream, 1_000);
    rmSync(dir, { recursive: true, force: true });
  });

  const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
  const jsonPayload = (value: unknown) => {
    const p = defaultPayloadConverter.toPayload(value);
    return {
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
      data: b64(p.data ?? new Uint8Array()),
    };
  };
  /** As the Web UI's browser code calls the codec: JSON, X-Namespace, from the UI's origin, no Authorization. */
  const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: uiOrigin, ...headers },
      body: JSON.stringify(body),
    });

  it('decodes for the Web UI, which sends no key, and the API alone would refuse it', async () => {
    const encoded = (await codec.encode([defaultPayloadConverter.toPayload({ name: 'marker-4c1d' })])).map((p) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
      data: b64(p.data ?? new Uint8Array()),
    }));
    // Directly, without a key: refused (the gateway's key is what opens it).
    expect((await post(upstreamUrl, '/codec/decode', { payloads: encoded })).status).toBe(401);

    const res = await post(url, '/codec/decode', { payloads: encoded });
    expect({ status: res.status, output }).toMatchObject({ status: 200 });
    expect(res.headers.get('access-control-allow-origin')).toBe(uiOrigin);
    const { payloads } = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(payloads[0]!.data, 'base64').toString()).toContain('marker-4c1d');

    // Encode too (the UI's signal and start forms), and whatever Authorization the browser sent is replaced.
    const enc = await post(url, '/codec/encode', { payloads: [jsonPayload('x')] }, { authorization: 'Bearer nope' });
    expect(enc.status).toBe(200);
    const merchant = await post(url, '/codec/encode', { payloads: [] }, { authorization: `Bearer ${MERCHANT_KEY}` });
    expect(merchant.status).toBe(200);
  });

  it("answers the browser's preflight as the API does, and refuses another origin", async () => {
    const preflight = await fetch(`${url}/codec/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: uiOrigin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(uiOrigin);
    const other = await post(url, '/codec/decode', { payloads: [] }, { origin: 'http://evil.example' });
    expect(other.status).toBe(403);
  });

  it('serves nothing but the two codec routes, and only POST there', async () => {
    for (const path of ['/', '/readyz', '/metrics', '/applications', '/codec', '/codec/decode/x', '/openapi.json'])
      expect({ path, status: (await fetch(`${url}${path}`)).status }).toEqual({ path, status: 404 });
    expect((await fetch(`${url}/codec/decode`)).status).toBe(403);
    expect((await fetch(`${url}/codec/encode`, { method: 'PUT', body: '{}' })).status).toBe(403);
  });
});
