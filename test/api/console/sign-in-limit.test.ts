/**
 * The console's sign-in limit and its icon over HTTP, on the internal app as `npm run api` wires it from the
 * environment (loadConfig, appDepsFromConfig, createInternalApp) with a stand-in Temporal client (nothing here reads
 * Temporal): wrong keys per client address (FAILED_AUTHENTICATIONS_PER_15_MINUTES, the count the API and /codec
 * share: test/api/failed-authentications.test.ts), then 429 with Retry-After and the console's own page, before the
 * key is checked; another address keeps its own count; the window's end gives the attempts back. Two client addresses on one machine: requests leave from 127.0.0.1 and from 127.0.0.2
 * (both loopback on Linux), so the server sees two sockets' addresses, as it would see two clients.
 */
import { request } from 'node:http';
import type { Server } from 'node:http';
import type { Client, Connection } from '@temporalio/client';
import { createInternalApp } from '../../../src/api/app';
import { boundPort, closeServer, listen } from '../../../src/api/http-server';
import { appDepsFromConfig } from '../../../src/api/listeners';
import { loadConfig } from '../../../src/config';
import { createLogger } from '../../../src/telemetry/logging';
import { FailedAuthentications } from '../../../src/api/auth-failures';

const KEY = 'console-limit-key-0123456789abcdefghij';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request from the client address `from` (a loopback address this machine holds). */
function send(
  url: string,
  options: { from: string; method?: string; form?: Record<string, string>; headers?: Record<string, string> },
): Promise<Answer> {
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        localAddress: options.from,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The internal app from `env`, with the sign-in window shortened to `windowMs` when given; its log lines kept. */
async function startApp(env: Record<string, string>, windowMs?: number) {
  const lines: string[] = [];
  const config = loadConfig({ MERCHANT_API_KEYS: `shop:${KEY}`, ...env });
  const deps = appDepsFromConfig({
    config,
    client: {} as Client,
    connection: {} as Connection,
    logger: createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } }),
  });
  const app = createInternalApp({
    ...deps,
    authFailures:
      windowMs === undefined
        ? deps.authFailures
        : new FailedAuthentications({
            metrics: deps.metrics,
            logger: deps.logger,
            attempts: config.failedAuthentications.per15Minutes,
            windowMs,
          }),
  });
  const server: Server = await listen(app, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${boundPort(server)}`;
  return {
    base,
    lines,
    deps,
    signIn: (key: string, from = '127.0.0.1') => send(`${base}/console/sign-in`, { from, form: { key } }),
    metric: async (name: string) => {
      const text = await deps.metrics.registry.metrics();
      return text.split('\n').filter((line) => line.startsWith(name));
    },
    close: () => closeServer(server, 1_000),
  };
}

describe('console sign-in limit (FAILED_AUTHENTICATIONS_PER_15_MINUTES)', () => {
  it('refuses the sign-in after the failed ones with 429, Retry-After and its own page, without checking the key; another address keeps its own count', async () => {
    const app = await startApp({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: '3' });
    try {
      const first = await app.signIn('wrong-key-1');
      expect(first.status).toBe(401);
      // The IETF headers, as the merchant budgets': the policy (3 in 900 s) and what is left.
      expect(first.headers['ratelimit-policy']).toMatch(/^"failed-authentications"; q=3; w=900; pk=:[A-Za-z0-9+/=]+:$/);
      expect(first.headers['ratelimit']).toMatch(/^"failed-authentications"; r=2; t=\d+/);
      // An accepted sign-in is never counted, nor a form sent without a key (not a guess).
      expect((await app.signIn(KEY)).status).toBe(303);
      expect((await app.signIn('')).status).toBe(401);
      expect((await app.signIn('wrong-key-2')).status).toBe(401);
      expect((await app.signIn('wrong-key-3')).status).toBe(401);
      const acceptedBefore = await app.metric('paylater_merchant_api_requests_total{merchant="shop"');
      const wrongBefore = await app.metric('paylater_merchant_api_requests_total{merchant="none",outcome="wrong"}');
      expect(wrongBefore).toEqual(['paylater_merchant_api_requests_total{merchant="none",outcome="wrong"} 3']);

      // The fourth failure's turn: refused, even with the right key (the key is never looked at).
      const refused = await app.signIn(KEY);
      expect(refused.status).toBe(429);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(900);
      expect(refused.headers['content-type']).toMatch(/^text\/html/);
      expect(refused.headers['content-security-policy']).toContain("default-src 'none'");
      expect(refused.headers['set-cookie']).toBeUndefined();
      expect(refused.body).toContain('<!doctype html>');
      expect(refused.body).toContain('Too many failed sign-ins from this address: try again in 15 minutes');
      expect(refused.body).toContain('href="/console/sign-in"');
      expect(refused.body).not.toContain('"type"'); // no problem JSON
      // Counted as a refusal, not as an authentication: neither "accepted" nor "wrong" moved.
      expect(await app.metric('paylater_merchant_api_requests_total{merchant="shop"')).toEqual(acceptedBefore);
      expect(await app.metric('paylater_merchant_api_requests_total{merchant="none",outcome="wrong"}')).toEqual(
        wrongBefore,
      );
      // A client's X-Forwarded-For is not believed (`trust proxy` is off): the socket's address is still refused.
      const forwarded = await send(`${app.base}/console/sign-in`, {
        from: '127.0.0.1',
        form: { key: 'wrong-key-4' },
        headers: { 'x-forwarded-for': '203.0.113.7', forwarded: 'for=203.0.113.7' },
      });
      expect(forwarded.status).toBe(429);
      expect(await app.metric('paylater_console_sign_in_refusals_total')).toEqual([
        'paylater_console_sign_in_refusals_total 2',
      ]);
      expect(await app.metric('paylater_authentication_refusals_total')).toEqual([
        'paylater_authentication_refusals_total{surface="console"} 2',
      ]);
      // One info line per address and window, at its first refusal, with the address and never a key.
      const refusals = app.lines.filter((line) => line.includes('too many failed authentications'));
      expect(refusals).toHaveLength(1);
      expect(JSON.parse(refusals[0]!)).toMatchObject({
        level: 30,
        clientAddress: '127.0.0.1',
        surface: 'console',
        retryAfterSeconds: retryAfter,
      });
      for (const line of app.lines) {
        expect(line).not.toContain(KEY);
        expect(line).not.toContain('wrong-key-');
      }
      // express-rate-limit's own checks found nothing to warn about (the address, the proxy settings).
      expect(app.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 40)).toEqual([]);

      // Another client address has its own count: told its key is wrong, then signed in.
      expect((await app.signIn('wrong-key-5', '127.0.0.2')).status).toBe(401);
      const other = await app.signIn(KEY, '127.0.0.2');
      expect(other.status).toBe(303);
      expect(other.headers['set-cookie']?.[0]).toMatch(/^paylater_console=/);
      // The limit is on signing in only: the form itself is still served to the refused address.
      expect((await send(`${app.base}/console/sign-in`, { from: '127.0.0.1' })).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('gives the attempts back when the window ends', async () => {
    const app = await startApp({ FAILED_AUTHENTICATIONS_PER_15_MINUTES: '1' }, 1_000);
    try {
      expect((await app.signIn('wrong-key-1')).status).toBe(401);
      const refused = await app.signIn(KEY);
      expect(refused.status).toBe(429);
      expect(refused.body).toContain('try again in 1 minute');
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect((await app.signIn(KEY)).status).toBe(303);
    } finally {
      await app.close();
    }
  });
});

describe('console icon', () => {
  it('serves a small SVG icon under the console, linked from every page and allowed by its policy', async () => {
    const app = await startApp({});
    try {
      for (const path of ['/console/assets/favicon.svg', '/console/favicon.ico']) {
        const icon = await send(`${app.base}${path}`, { from: '127.0.0.1' });
        expect(icon.status).toBe(200);
        expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
        expect(icon.headers['cache-control']).toBe('public, max-age=604800');
        expect(icon.headers['x-content-type-options']).toBe('nosniff');
        expect(icon.body).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
        expect(icon.body).not.toMatch(/<script|href=|url\(/i); // nothing to load, nothing to run
        expect(icon.body.length).toBeLessThan(1_024);
        // Same origin: the console's img-src 'self' lets the browser load it.
        expect(icon.headers['content-security-policy']).toContain("img-src 'self'");
      }
      const form = await send(`${app.base}/console/sign-in`, { from: '127.0.0.1' });
      expect(form.body).toContain('<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml" />');
      const head = await send(`${app.base}/console/assets/favicon.svg`, { from: '127.0.0.1', method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.body).toBe('');
    } finally {
      await app.close();
    }
  });
});
