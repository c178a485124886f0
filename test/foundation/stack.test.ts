import { startTestStack, type TestStack } from '../helpers/stack';

describe('the in-process test stack', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

  it('serves liveness on both listeners, readiness against the real server and metrics on the internal one', async () => {
    expect((await fetch(`${stack.publicUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${stack.internalUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${stack.internalUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });
    const metrics = await (
      await fetch(`${stack.internalUrl}/metrics`, { headers: { authorization: `Bearer ${stack.operatorKey}` } })
    ).text();
    expect(metrics).toContain('paylater_http_request_duration_seconds');
    // The bank's listener: readiness for its load balancer (draining only, never a Temporal call), no metrics.
    expect((await fetch(`${stack.publicUrl}/readyz`)).status).toBe(200);
    expect((await fetch(`${stack.publicUrl}/metrics`)).status).toBe(404);
  });

  it('answers an unknown route with a JSON 404 on both listeners', async () => {
    for (const url of [stack.publicUrl, stack.internalUrl]) {
      const res = await fetch(`${url}/nope`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'not_found' });
    }
  });

  it('restarts its worker', async () => {
    await stack.stopWorker();
    expect(stack.worker()).toBeUndefined();
    await stack.startWorker();
    expect(stack.worker()?.getState()).toBe('RUNNING');
  });
});
