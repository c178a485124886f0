import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSandbox, type RunningSandbox, type SandboxOptions } from '../../src/sandbox';

export const CLIENT_ID = 'test-client';
export const CLIENT_SECRET = 'test-secret';

/** A sandbox with test credentials and fast defaults; every test closes it. */
export function sandbox(options: Partial<SandboxOptions> = {}): Promise<RunningSandbox> {
  return startSandbox({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    lifecycle: { stepMs: 20 },
    webhookRetry: { attempts: 4, initialDelayMs: 10, maxDelayMs: 40, timeoutMs: 500 },
    refresh: { bankDelayMs: [5, 30] },
    ...options,
  });
}

export interface ReceivedRequest {
  method: string;
  /** The request target exactly as received. */
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  /** Answers for the next requests, in order (a status, or 'hang'); afterwards `fallback`. */
  answers: (number | 'hang')[];
  fallback: number | 'hang';
  close(): Promise<void>;
}

/** A local webhook receiver on a raw node:http server, so the request target is seen unnormalised. */
export async function startReceiver(): Promise<Receiver> {
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: '',
    received: [],
    answers: [],
    fallback: 200,
    close: async () => {
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the text
      }
      receiver.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const answer = receiver.answers.length > 0 ? receiver.answers.shift()! : receiver.fallback;
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.statusCode = answer;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

export async function waitFor<T>(
  probe: () => T | undefined | false,
  what = 'condition',
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function tokenForm(overrides: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  const all: Record<string, string | undefined> = {
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    grant_type: 'client_credentials',
    scope: 'PAY_LATER',
    ...overrides,
  };
  for (const [key, value] of Object.entries(all)) if (value !== undefined) params.set(key, value);
  return params.toString();
}

export async function token(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/v2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: tokenForm(),
  });
  if (res.status !== 200) throw new Error(`token request failed: ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** Parsed JSON as tests read it: loosely typed on purpose, the assertions check its shape. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A JSON call to the banking API with a Bearer token. */
export async function api(
  url: string,
  accessToken: string | null,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const headers: Record<string, string> = {};
  if (accessToken !== null) headers.authorization = `Bearer ${accessToken}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
