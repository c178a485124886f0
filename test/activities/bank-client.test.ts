import { Pool } from 'undici';
import { BankClient } from '../../src/activities/bank/bank-client';
import { createBankClient, type BankClientHandle } from '../../src/activities/bank/create-bank-client';
import {
  BankInvalidResponseError,
  BankRateLimitedError,
  BankRejectedError,
  BankUnauthorizedError,
  BankUnavailableError,
} from '../../src/activities/bank/errors';
import { parseRetryAfter } from '../../src/http-client/retry-after';
import { closedPortUrl, hang, reply, startFakeBank, type FakeBank } from './helpers/fake-bank';

const clientId = 'merchant-app';
const clientSecret = 'client-secret-for-tests';

describe('BankClient over real HTTP', () => {
  let bank: FakeBank;
  let handle: BankClientHandle;

  const open = async (tokenTtlSeconds = 3600, extra: { callTimeoutMs?: number } = {}): Promise<void> => {
    bank = await startFakeBank({ clientId, clientSecret, tokenTtlSeconds });
    handle = createBankClient({ authUrl: bank.url, baseUrl: bank.url, clientId, clientSecret, ...extra });
  };
  afterEach(async () => {
    await handle.close();
    await bank.close();
  });

  it('200 concurrent calls on a cold cache make exactly one token request', async () => {
    await open();
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => handle.client.getApplicationStatus(`fa-${i}`)),
    );
    expect(results).toHaveLength(200);
    expect(bank.tokenRequestCount()).toBe(1);
    expect(bank.unauthorizedCount()).toBe(0);
  });

  it('renews an expired token before using it (short TTL)', async () => {
    await open(1); // 1 s tokens: the provider renews after half the lifetime
    await handle.client.getApplicationStatus('fa-1');
    await new Promise((resolve) => setTimeout(resolve, 1100)); // let the bank-side expiry pass
    await handle.client.getApplicationStatus('fa-1');
    expect(bank.tokenRequestCount()).toBe(2);
    expect(bank.unauthorizedCount()).toBe(0); // the expired token was never sent
  });

  it('replaces a token the bank revoked after one 401, and the call succeeds', async () => {
    await open();
    await handle.client.getApplicationStatus('fa-1');
    bank.revokeAllTokens();
    await expect(handle.client.getApplicationStatus('fa-1')).resolves.toMatchObject({ status: 'IN_PROGRESS' });
    expect(bank.unauthorizedCount()).toBe(1);
    expect(bank.tokenRequestCount()).toBe(2);
  });

  it('200 concurrent calls after a revocation share one new token', async () => {
    await open();
    await handle.client.getApplicationStatus('warm-up');
    bank.revokeAllTokens();
    await Promise.all(Array.from({ length: 200 }, (_, i) => handle.client.getApplicationStatus(`fa-${i}`)));
    expect(bank.tokenRequestCount()).toBe(2);
  });

  it('sends the token only as a Bearer header, bodies as JSON, and no headers the bank does not document', async () => {
    await open();
    const created = await handle.client.createApplication({ redirectUrl: 'https://shop.example/back', amount: 100 });
    expect(created).toEqual({
      financeApplicationId: expect.any(String),
      status: 'CREATED',
      bankReference: expect.any(String),
    });
    const [token] = bank.issuedTokens();
    const call = bank.requests.find((r) => r.route === 'createApplication')!;
    expect(call.headers.authorization).toBe(`Bearer ${token}`);
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.headers['idempotency-key']).toBeUndefined();
    expect(call.path).not.toContain(token!);
    expect(JSON.parse(call.body)).toEqual({ redirectUrl: 'https://shop.example/back', amount: 100 });
  });

  it('encodes the application id into the path and keeps unknown response fields', async () => {
    await open();
    const status = await handle.client.getApplicationStatus('a/b ?c');
    expect(bank.requests.at(-1)!.path).toBe('/applications/a%2Fb%20%3Fc/status');
    expect(status).toEqual({ financeApplicationId: 'a/b ?c', status: 'IN_PROGRESS', riskBand: 'B' });
  });

  it('startRefresh PUTs { consentId } and returns the task', async () => {
    await open();
    const task = await handle.client.startRefresh('consent-1');
    const call = bank.requests.at(-1)!;
    expect([call.method, call.path, JSON.parse(call.body)]).toEqual(['PUT', '/refresh', { consentId: 'consent-1' }]);
    expect(task).toMatchObject({ taskId: expect.any(String), consentId: 'consent-1', banks: 2 });
  });

  describe('error classes', () => {
    it('4xx → BankRejectedError with status and the bank message (body truncated)', async () => {
      await open();
      bank.override(
        'createApplication',
        reply(422, { error: 'invalid_request', message: `bad redirectUrl ${'x'.repeat(2000)}` }),
      );
      const err = (await handle.client
        .createApplication({ redirectUrl: 'nope' })
        .catch((e: unknown) => e)) as BankRejectedError;
      expect(err).toBeInstanceOf(BankRejectedError);
      expect(err.status).toBe(422);
      expect(err.bankError).toBe('invalid_request');
      expect(err.bankMessage!.startsWith('bad redirectUrl')).toBe(true);
      expect(err.bankMessage!.length).toBeLessThan(600);
    });

    it('401 twice → BankUnauthorizedError (one retry with a fresh token, no more)', async () => {
      await open();
      bank.override('getApplicationStatus', reply(401, { error: 'invalid_token' }), 2);
      await expect(handle.client.getApplicationStatus('fa-1')).rejects.toBeInstanceOf(BankUnauthorizedError);
      expect(bank.requests.filter((r) => r.route === 'getApplicationStatus')).toHaveLength(2);
      expect(bank.tokenRequestCount()).toBe(2);
    });

    it('429 → BankRateLimitedError with Retry-After in seconds or as an HTTP date', async () => {
      await open();
      bank.override('startRefresh', reply(429, { error: 'too_many_requests' }, { 'retry-after': '7' }));
      const err = (await handle.client.startRefresh('c').catch((e: unknown) => e)) as BankRateLimitedError;
      expect(err).toBeInstanceOf(BankRateLimitedError);
      expect(err.retryAfterMs).toBe(7000);

      const now = Date.parse('2030-01-01T00:00:00Z');
      expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:30 GMT', now)).toBe(30_000);
      expect(parseRetryAfter('Mon, 31 Dec 2029 00:00:00 GMT', now)).toBe(0);
      expect(parseRetryAfter('soon', now)).toBeUndefined();
      expect(parseRetryAfter(undefined, now)).toBeUndefined();
    });

    it('5xx → BankUnavailableError with the status', async () => {
      await open();
      bank.override('getApplicationStatus', reply(503, 'upstream down'));
      const err = (await handle.client.getApplicationStatus('fa').catch((e: unknown) => e)) as BankUnavailableError;
      expect(err).toBeInstanceOf(BankUnavailableError);
      expect(err.status).toBe(503);
    });

    it('connection refused → BankUnavailableError with the code', async () => {
      await open();
      const down = await closedPortUrl();
      const pool = new Pool(down);
      const client = new BankClient({ baseUrl: down, dispatcher: pool, tokens: handle.tokens });
      try {
        const err = (await client.getApplicationStatus('fa').catch((e: unknown) => e)) as BankUnavailableError;
        expect(err).toBeInstanceOf(BankUnavailableError);
        expect(err.code).toBe('ECONNREFUSED');
      } finally {
        await pool.close();
      }
    });

    it('a bank that never answers → BankUnavailableError (timeout)', async () => {
      await open(3600, { callTimeoutMs: 300 });
      bank.override('getApplicationStatus', hang);
      const err = (await handle.client.getApplicationStatus('fa').catch((e: unknown) => e)) as BankUnavailableError;
      expect(err).toBeInstanceOf(BankUnavailableError);
      expect(err.code).toBe('TIMEOUT');
    });

    it('invalid 2xx body → BankInvalidResponseError (not JSON, or missing fields)', async () => {
      await open();
      bank.override('createApplication', reply(201, '<html>ok</html>'));
      await expect(handle.client.createApplication({ redirectUrl: 'https://x' })).rejects.toBeInstanceOf(
        BankInvalidResponseError,
      );
      bank.override('startRefresh', reply(200, { task: 'missing taskId' }));
      await expect(handle.client.startRefresh('c')).rejects.toThrow(/taskId/);
    });

    it('a token endpoint that refuses our credentials → BankUnauthorizedError', async () => {
      bank = await startFakeBank({ clientId, clientSecret });
      handle = createBankClient({ authUrl: bank.url, baseUrl: bank.url, clientId, clientSecret: 'wrong' });
      await expect(handle.client.getApplicationStatus('fa')).rejects.toBeInstanceOf(BankUnauthorizedError);
    });

    it("the caller's abort (activity cancellation) is passed through, not turned into a bank error", async () => {
      await open();
      bank.override('getApplicationStatus', hang);
      const controller = new AbortController();
      const call = handle.client.getApplicationStatus('fa', { signal: controller.signal });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const reason = new Error('activity cancelled');
      controller.abort(reason);
      await expect(call).rejects.toBe(reason);
    });
  });

  it('close() may be called twice (worker shutdown paths overlap)', async () => {
    await open();
    await handle.client.getApplicationStatus('fa');
    await handle.close();
    await expect(handle.close()).resolves.toBeUndefined();
  });
});
