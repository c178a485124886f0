import { startTestStack, type TestStack } from '../helpers/stack';

describe('the in-process test stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

  it('serves liveness, readiness against the real server, and metrics', async () => {
    expect((await fetch(`${stack.apiUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${stack.apiUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });
    const metrics = await (await fetch(`${stack.apiUrl}/metrics`)).text();
    expect(metrics).toContain('http_request_duration_seconds');
  });

  it('answers an unknown route with a JSON 404', async () => {
    const res = await fetch(`${stack.apiUrl}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: 'not_found' });
  });

  it('restarts its worker', async () => {
    await stack.stopWorker();
    expect(stack.worker()).toBeUndefined();
    await stack.startWorker();
    expect(stack.worker()?.getState()).toBe('RUNNING');
  });
});
