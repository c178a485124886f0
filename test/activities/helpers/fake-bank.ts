import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small bank over real HTTP on 127.0.0.1 for the activity tests: the token endpoint of docs/bank-interface.md
 * 4.1 with expiring, revocable tokens, and the three API routes. Tests queue one-shot overrides per route
 * to produce each failure. (The full sandbox lives in src/sandbox; these tests only need the wire.)
 */
export type FakeRoute = 'token' | 'createApplication' | 'getApplicationStatus' | 'startRefresh';

export interface RecordedRequest {
  route: FakeRoute;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Override = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export interface FakeBankOptions {
  clientId: string;
  clientSecret: string;
  tokenTtlSeconds?: number;
}

export interface FakeBank {
  url: string;
  requests: RecordedRequest[];
  tokenRequestCount(): number;
  /** API answers of 401 (tokens the bank no longer accepts). */
  unauthorizedCount(): number;
  issuedTokens(): string[];
  revokeAllTokens(): void;
  /** Answers the next request to `route` with `override` instead of the normal behaviour. */
  override(route: FakeRoute, override: Override, times?: number): void;
  close(): Promise<void>;
}

export async function startFakeBank(options: FakeBankOptions): Promise<FakeBank> {
  const tokens = new Map<string, number>();
  const issued: string[] = [];
  const requests: RecordedRequest[] = [];
  const overrides: { route: FakeRoute; fn: Override; left: number }[] = [];
  let unauthorized = 0;
  let sequence = 0;

  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  const routeOf = (method: string, path: string): FakeRoute | undefined => {
    if (method === 'POST' && path === '/oauth/v2/token') return 'token';
    if (method === 'POST' && path === '/applications') return 'createApplication';
    if (method === 'GET' && /^\/applications\/[^/]+\/status$/.test(path)) return 'getApplicationStatus';
    if (method === 'PUT' && path === '/refresh') return 'startRefresh';
    return undefined;
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0]!;
      const route = routeOf(req.method ?? 'GET', path);
      if (!route) return json(res, 404, { error: 'not_found', message: `no route ${req.method} ${path}` });
      requests.push({ route, method: req.method!, path, headers: req.headers, body });

      const queued = overrides.find((o) => o.route === route);
      if (queued) {
        queued.left -= 1;
        if (queued.left <= 0) overrides.splice(overrides.indexOf(queued), 1);
        return queued.fn(req, res, body);
      }

      if (route === 'token') {
        const form = new URLSearchParams(body);
        if (req.headers['content-type'] !== 'application/x-www-form-urlencoded') {
          return json(res, 400, { error: 'invalid_request', message: 'form-encoded body required' });
        }
        if (form.get('client_id') !== options.clientId || form.get('client_secret') !== options.clientSecret) {
          return json(res, 401, { error: 'invalid_client', message: 'unknown client' });
        }
        if (form.get('grant_type') !== 'client_credentials' || form.get('scope') !== 'PAY_LATER') {
          return json(res, 400, { error: 'invalid_request', message: 'bad grant_type or scope' });
        }
        const ttl = options.tokenTtlSeconds ?? 3600;
        const token = randomBytes(24).toString('base64url');
        tokens.set(token, Date.now() + ttl * 1000);
        issued.push(token);
        // A little latency so concurrent callers really overlap with the request in flight.
        setTimeout(
          () => json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: 'PAY_LATER' }),
          20,
        );
        return;
      }

      const auth = req.headers.authorization ?? '';
      const token = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : '';
      const expiresAt = tokens.get(token);
      if (expiresAt === undefined || Date.now() >= expiresAt) {
        unauthorized += 1;
        return json(res, 401, { error: 'invalid_token', message: 'token unknown or expired' });
      }

      sequence += 1;
      if (route === 'createApplication') {
        return json(res, 201, {
          financeApplicationId: `fa-${sequence}`,
          status: 'CREATED',
          bankReference: `br-${sequence}`,
        });
      }
      if (route === 'getApplicationStatus') {
        const id = decodeURIComponent(path.split('/')[2]!);
        return json(res, 200, { financeApplicationId: id, status: 'IN_PROGRESS', riskBand: 'B' });
      }
      const parsed = JSON.parse(body) as { consentId?: string };
      return json(res, 200, { taskId: `task-${sequence}`, consentId: parsed.consentId, banks: 2 });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    tokenRequestCount: () => requests.filter((r) => r.route === 'token').length,
    unauthorizedCount: () => unauthorized,
    issuedTokens: () => [...issued],
    revokeAllTokens: () => tokens.clear(),
    override: (route, fn, times = 1) => {
      overrides.push({ route, fn, left: times });
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** An answer that never comes: the client's own timeout must end the call. */
export const hang: Override = () => undefined;

export const reply =
  (status: number, body: unknown, headers: Record<string, string> = {}): Override =>
  (_req, res) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(text);
  };

/** A port on 127.0.0.1 with nobody listening (bound then released). */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
