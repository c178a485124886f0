import { Pool } from 'undici';
import { BankRejectedError, BankUnauthorizedError, BankUnavailableError } from '../../src/activities/bank/errors';
import { ClientCredentialsTokenProvider } from '../../src/activities/bank/token-provider';
import { captureLogs } from './helpers/log-capture';
import { reply, startFakeBank, type FakeBank } from './helpers/fake-bank';

const clientId = 'merchant-app';
const clientSecret = 'super secret/value+7f3a=';

describe('ClientCredentialsTokenProvider (real HTTP, fake clock)', () => {
  let bank: FakeBank;
  let pool: Pool;
  let clock: number;
  const logs = captureLogs();
  const provider = (overrides: { refreshMarginMs?: number } = {}): ClientCredentialsTokenProvider =>
    new ClientCredentialsTokenProvider({
      authUrl: bank.url,
      clientId,
      clientSecret,
      dispatcher: pool,
      now: () => clock,
      logger: logs.logger,
      ...overrides,
    });

  beforeEach(async () => {
    bank = await startFakeBank({ clientId, clientSecret, tokenTtlSeconds: 3600 });
    pool = new Pool(bank.url, { connections: 4 });
    clock = 1_700_000_000_000;
  });
  afterEach(async () => {
    await pool.close();
    await bank.close();
  });

  it('posts the documented form and reuses the token while it is fresh', async () => {
    const tokens = provider();
    const first = await tokens.getToken();
    clock += 60 * 60_000 - 61_000; // just before the 60 s refresh margin
    expect(await tokens.getToken()).toBe(first);
    expect(bank.tokenRequestCount()).toBe(1);

    const sent = bank.requests[0]!;
    expect(sent.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(sent.body))).toEqual({
      client_id: clientId,
      client_secret: clientSecret,
      grant_type: 'client_credentials',
      scope: 'PAY_LATER',
    });
  });

  it('renews the token once the clock enters the refresh margin', async () => {
    const tokens = provider({ refreshMarginMs: 30_000 });
    const first = await tokens.getToken();
    clock += 60 * 60_000 - 30_000;
    const second = await tokens.getToken();
    expect(second).not.toBe(first);
    expect(bank.tokenRequestCount()).toBe(2);
  });

  it('shares one request between 200 concurrent callers on a cold cache', async () => {
    const tokens = provider();
    const results = await Promise.all(Array.from({ length: 200 }, () => tokens.getToken()));
    expect(new Set(results).size).toBe(1);
    expect(bank.tokenRequestCount()).toBe(1);
  });

  it('resets after a failed request so the next call retries', async () => {
    bank.override('token', reply(503, { error: 'server_error' }));
    const tokens = provider();
    const failures = await Promise.allSettled([tokens.getToken(), tokens.getToken()]);
    expect(failures.map((f) => f.status)).toEqual(['rejected', 'rejected']);
    expect((failures[0] as PromiseRejectedResult).reason).toBeInstanceOf(BankUnavailableError);
    expect(bank.tokenRequestCount()).toBe(1);

    await expect(tokens.getToken()).resolves.toEqual(expect.any(String));
    expect(bank.tokenRequestCount()).toBe(2);
  });

  it('invalidate drops only the token it names', async () => {
    const tokens = provider();
    const first = await tokens.getToken();
    tokens.invalidate(first);
    const second = await tokens.getToken();
    expect(second).not.toBe(first);
    tokens.invalidate(first); // a late 401 for the old token must not drop the new one
    expect(await tokens.getToken()).toBe(second);
    expect(bank.tokenRequestCount()).toBe(2);
  });

  it("one caller's abort does not fail the others sharing the request", async () => {
    const tokens = provider();
    const controller = new AbortController();
    const aborted = tokens.getToken(controller.signal);
    const patient = tokens.getToken();
    controller.abort();
    await expect(aborted).rejects.toThrow();
    await expect(patient).resolves.toEqual(expect.any(String));
    expect(bank.tokenRequestCount()).toBe(1);
  });

  it('wrong credentials are BankUnauthorized; other refusals BankRejected; the secret never leaks', async () => {
    const wrong = new ClientCredentialsTokenProvider({
      authUrl: bank.url,
      clientId,
      clientSecret: 'wrong',
      dispatcher: pool,
    });
    await expect(wrong.getToken()).rejects.toBeInstanceOf(BankUnauthorizedError);

    // An auth server that echoes the request back in its error must not get the secret into our error.
    bank.override('token', (_req, res, body) => {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'invalid_scope', message: body }));
    });
    const err = await provider()
      .getToken()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BankRejectedError);
    const everything = JSON.stringify({ message: (err as Error).message, ...(err as object) }) + logs.text();
    expect(everything).toContain('[redacted]');
    for (const form of [clientSecret, new URLSearchParams({ s: clientSecret }).toString().slice(2)]) {
      expect(everything).not.toContain(form);
    }
  });

  it("keeps a refusal's documented message, one line, and only a summary of any other body", async () => {
    bank.override('token', (_req, res) =>
      res.writeHead(400, { 'content-type': 'text/html' }).end('<html>gateway page with customer 4711</html>'),
    );
    const raw = (await provider()
      .getToken()
      .catch((e: unknown) => e)) as BankRejectedError;
    expect(raw.bankMessage).toMatch(/^a body that is not JSON \(44 bytes, sha256 [0-9a-f]{16}…; not kept\)$/);
    expect(JSON.stringify({ ...raw, message: raw.message }) + logs.text()).not.toContain('4711');

    bank.override('token', (_req, res) =>
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: '<b>not a code</b>', message: 'scope\nnot\u0000allowed' })),
    );
    const said = (await provider()
      .getToken()
      .catch((e: unknown) => e)) as BankRejectedError;
    expect([said.bankError, said.bankMessage]).toEqual([undefined, 'scope not allowed']);
  });

  it('never logs the token', async () => {
    const token = await provider().getToken();
    expect(logs.text()).toContain('Bank access token obtained');
    expect(logs.text()).not.toContain(token);
  });
});
