import type { RunningSandbox } from '../../src/sandbox';
import { api, sandbox, sleep, token, tokenForm } from './helpers';

const postToken = (url: string, body: string, contentType = 'application/x-www-form-urlencoded') =>
  fetch(`${url}/oauth/v2/token`, { method: 'POST', headers: { 'content-type': contentType }, body });

describe('sandbox token endpoint and bearer checks', () => {
  let sbx: RunningSandbox;
  afterEach(async () => {
    await sbx.close();
  });

  test('issues an opaque Bearer token for the client-credentials grant and counts requests', async () => {
    sbx = await sandbox({ tokenTtlSeconds: 120 });
    const res = await postToken(sbx.url, tokenForm());
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 120,
      scope: 'PAY_LATER',
    });
    const second = (await (await postToken(sbx.url, tokenForm())).json()) as Record<string, unknown>;
    expect(second.access_token).not.toBe(body.access_token);
    await postToken(sbx.url, tokenForm({ client_secret: 'nope' }));
    expect(sbx.control.tokenRequestCount()).toBe(3);
  });

  test('validates the token request like RFC 6749', async () => {
    sbx = await sandbox();
    const cases: [string, string, number, string][] = [
      [JSON.stringify({ client_id: 'x' }), 'application/json', 400, 'invalid_request'],
      [tokenForm({ scope: undefined }), 'application/x-www-form-urlencoded', 400, 'invalid_request'],
      [tokenForm({ client_id: undefined }), 'application/x-www-form-urlencoded', 400, 'invalid_request'],
      [tokenForm({ grant_type: 'password' }), 'application/x-www-form-urlencoded', 400, 'unsupported_grant_type'],
      [tokenForm({ client_secret: 'wrong' }), 'application/x-www-form-urlencoded', 401, 'invalid_client'],
      [tokenForm({ client_id: 'other' }), 'application/x-www-form-urlencoded', 401, 'invalid_client'],
      [tokenForm({ scope: 'ACCOUNTS' }), 'application/x-www-form-urlencoded', 400, 'invalid_scope'],
      [`${tokenForm()}&scope=PAY_LATER`, 'application/x-www-form-urlencoded', 400, 'invalid_request'],
    ];
    for (const [body, contentType, status, error] of cases) {
      const res = await postToken(sbx.url, body, contentType);
      expect({ body, status: res.status }).toEqual({ body, status });
      expect(((await res.json()) as { error: string }).error).toBe(error);
    }
  });

  test('answers 401 to a missing, wrong, expired or revoked token and 400 to a token in the query string', async () => {
    sbx = await sandbox({ tokenTtlSeconds: 1 });
    const missing = await api(sbx.url, null, 'GET', '/applications/x/status');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(missing.body.error).toBe('invalid_token');
    expect((await api(sbx.url, 'not-a-token', 'GET', '/applications/x/status')).status).toBe(401);

    const good = await token(sbx.url);
    expect((await api(sbx.url, good, 'GET', '/applications/x/status')).status).toBe(404);
    const inQuery = await api(sbx.url, null, 'GET', `/applications/x/status?access_token=${good}`);
    expect(inQuery.status).toBe(400);
    expect(inQuery.body.error).toBe('invalid_request');
    // Basic scheme instead of Bearer.
    const basic = await fetch(`${sbx.url}/applications/x/status`, { headers: { authorization: `Basic ${good}` } });
    expect(basic.status).toBe(401);
    await basic.arrayBuffer();

    await sleep(1_100);
    const expired = await api(sbx.url, good, 'GET', '/applications/x/status');
    expect(expired.status).toBe(401);
    expect(expired.body.message).toMatch(/expired/);

    const fresh = await token(sbx.url);
    sbx.control.revokeAllTokens();
    expect((await api(sbx.url, fresh, 'PUT', '/refresh', { consentId: 'c' })).status).toBe(401);
    expect((await api(sbx.url, fresh, 'POST', '/applications', { redirectUrl: 'https://m.example/r' })).status).toBe(
      401,
    );
    expect((await api(sbx.url, await token(sbx.url), 'PUT', '/refresh', { consentId: 'c' })).status).toBe(202);
  });

  test('token expiry follows the injected clock', async () => {
    let now = Date.UTC(2030, 0, 1, 10, 0, 0);
    sbx = await sandbox({ tokenTtlSeconds: 60, clock: () => now });
    const t = await token(sbx.url);
    now += 59_000;
    expect((await api(sbx.url, t, 'GET', '/applications/x/status')).status).toBe(404);
    now += 1_000;
    expect((await api(sbx.url, t, 'GET', '/applications/x/status')).status).toBe(401);
    expect(sbx.control.apiCalls().map((c) => [c.route, c.status])).toEqual([
      ['token', 200],
      ['getStatus', 404],
      ['getStatus', 401],
    ]);
  });

  test('rejects invalid options at start', async () => {
    await expect(sandbox({ clientSecret: '' })).rejects.toThrow(/clientSecret/);
    sbx = await sandbox();
  });
});
