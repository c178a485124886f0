import type { RunningSandbox } from '../../src/sandbox';
import { api, sandbox, token, tokenForm } from './helpers';

describe('sandbox API faults', () => {
  let sbx: RunningSandbox;
  let t: string;
  beforeEach(async () => {
    sbx = await sandbox();
    t = await token(sbx.url);
  });
  afterEach(async () => {
    await sbx.close();
  });

  test('5xx for the next N calls of a route, then normal answers', async () => {
    sbx.control.injectApiFault({ route: 'getStatus', kind: '5xx', count: 2 });
    sbx.control.injectApiFault({ route: 'refresh', kind: '5xx', status: 500 });
    expect((await api(sbx.url, t, 'GET', '/applications/x/status')).status).toBe(503);
    const second = await api(sbx.url, t, 'GET', '/applications/x/status');
    expect(second.status).toBe(503);
    expect(second.body).toEqual({ error: 'server_error', message: expect.any(String) });
    expect((await api(sbx.url, t, 'GET', '/applications/x/status')).status).toBe(404);
    expect((await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c' })).status).toBe(500);
    expect((await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c' })).status).toBe(202);
    // A faulted call did not reach the bank: only the last refresh made a task.
    expect(sbx.control.refreshTasks()).toHaveLength(1);
  });

  test('afterActing: the bank acts, then answers 500 or 429 (the ambiguous answer a client must retry safely)', async () => {
    sbx.control.injectApiFault({ route: 'createApplication', kind: '5xx', afterActing: true });
    sbx.control.injectApiFault({ route: 'refresh', kind: '429', afterActing: true, retryAfterSeconds: 2 });
    const create = await api(sbx.url, t, 'POST', '/applications', { redirectUrl: 'https://m.example/r' });
    expect(create.status).toBe(500);
    expect(create.body).toEqual({ error: 'server_error', message: expect.stringContaining('after acting') });
    expect(sbx.control.applications()).toHaveLength(1); // created although the answer was an error
    const refresh = await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c' });
    expect(refresh.status).toBe(429);
    expect(refresh.headers.get('retry-after')).toBe('2');
    expect(sbx.control.refreshTasks()).toHaveLength(1);
    expect(
      sbx.control
        .apiCalls()
        .filter((c) => c.afterActing)
        .map((c) => [c.route, c.status]),
    ).toEqual([
      ['createApplication', 500],
      ['refresh', 429],
    ]);
  });

  test('429 with Retry-After, on the token route too', async () => {
    sbx.control.injectApiFault({ route: 'token', kind: '429', retryAfterSeconds: 7 });
    const res = await fetch(`${sbx.url}/oauth/v2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: tokenForm(),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    await res.arrayBuffer();
    expect(sbx.control.tokenRequestCount()).toBe(2);
    await token(sbx.url);
    sbx.control.injectApiFault({ route: 'createApplication', kind: '429' });
    const create = await api(sbx.url, t, 'POST', '/applications', { redirectUrl: 'https://m.example/r' });
    expect(create.status).toBe(429);
    expect(create.headers.get('retry-after')).toBe('1');
  });

  test("latency then a normal answer; '*' matches any route; 'unlimited' lasts until cleared", async () => {
    sbx.control.injectApiFault({ route: '*', kind: 'latency', latencyMs: 30 });
    expect((await api(sbx.url, t, 'PUT', '/refresh', { consentId: 'c' })).status).toBe(202);
    sbx.control.injectApiFault({ route: 'getStatus', kind: '5xx', count: 'unlimited' });
    for (let i = 0; i < 3; i++) expect((await api(sbx.url, t, 'GET', '/applications/x/status')).status).toBe(503);
    sbx.control.clearApiFaults();
    expect((await api(sbx.url, t, 'GET', '/applications/x/status')).status).toBe(404);
    expect(sbx.control.apiCalls().map((c) => [c.route, c.status, c.fault])).toEqual([
      ['token', 200, undefined],
      ['refresh', 202, 'latency'],
      ['getStatus', 503, '5xx'],
      ['getStatus', 503, '5xx'],
      ['getStatus', 503, '5xx'],
      ['getStatus', 404, undefined],
    ]);
  });

  test('hang never answers until the sandbox closes; the call is logged unanswered', async () => {
    sbx.control.injectApiFault({ route: 'createApplication', kind: 'hang' });
    const controller = new AbortController();
    const pending = fetch(`${sbx.url}/applications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: JSON.stringify({ redirectUrl: 'https://m.example/r' }),
      signal: controller.signal,
    }).then(
      (res) => res.status,
      (err: Error) => err.name,
    );
    const outcome = await Promise.race([
      pending,
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 100)),
    ]);
    expect(outcome).toBe('still waiting');
    expect(sbx.control.apiCalls().at(-1)).toMatchObject({ route: 'createApplication', status: null, fault: 'hang' });
    expect(sbx.control.applications()).toEqual([]);
    await sbx.close();
    // Closing destroys the hung socket: the client sees a network error, never a response.
    expect(await pending).toBe('TypeError');
    sbx = await sandbox();
  });

  test('unknown routes are 404 JSON; errors are never HTML', async () => {
    const res = await api(sbx.url, t, 'GET', '/nope');
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });
});
