import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';

/**
 * A merchant's start call waits for the bank's answer through the workflow. With no worker polling (a deploy,
 * an outage) it must not hang: after the deadline it gets a 503 with Retry-After, and the same request
 * retried once workers are back returns the one application (the reference is the idempotency key).
 */
describe('merchant start calls under a deadline', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ startDeadlineMs: 1_500, readDeadlineMs: 1_500 });
  });
  afterAll(async () => stack?.close());

  const post = (path: string, body: unknown) =>
    stack.facade(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('answers 503 with Retry-After while no worker runs, then the retry returns the one application', async () => {
    await stack.stopWorker();
    const merchantReference = `deadline-${Date.now()}`;
    const body = { merchantReference, redirectUrl: 'https://shop.example/return' };
    const first = await post('/applications', body);
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('5');
    expect(await first.json()).toMatchObject({
      error: 'unavailable',
      message: expect.stringMatching(/retry the same request/),
    });

    await stack.startWorker();
    const retried = await eventually(async () => {
      const res = await post('/applications', body);
      return res.status === 503 ? undefined : res;
    });
    expect([200, 201]).toContain(retried.status);
    const started = (await retried.json()) as { financeApplicationId: string };
    const atBank = stack.sandbox.control
      .applications()
      .filter((a) => a.createRequest.merchantReference === merchantReference);
    expect(atBank.map((a) => a.financeApplicationId)).toEqual([started.financeApplicationId]);
  });

  it('answers 503 for a refresh while no worker runs, then the retry gets the one taskId', async () => {
    await stack.stopWorker();
    const consentId = `consent-deadline-${Date.now()}`;
    expect((await post(`/consents/${consentId}/refresh`, {})).status).toBe(503);
    await stack.startWorker();
    const retried = await eventually(async () => {
      const res = await post(`/consents/${consentId}/refresh`, {});
      return res.status === 503 ? undefined : res;
    });
    expect(retried.status).toBe(202);
    const { taskId } = (await retried.json()) as { taskId: string };
    expect(
      stack.sandbox.control
        .refreshTasks()
        .filter((t) => t.consentId === consentId)
        .map((t) => t.taskId),
    ).toEqual([taskId]);
  });

  it('answers a plain read 503 with Retry-After while no worker can answer its query, then 200 once one runs', async () => {
    const merchantReference = `read-deadline-${Date.now()}`;
    const created = await post('/applications', { merchantReference, redirectUrl: 'https://shop.example/return' });
    expect(created.status).toBe(201);
    await stack.stopWorker();
    const read = await stack.facade(`/applications/${merchantReference}`, { signal: AbortSignal.timeout(15_000) });
    expect(read.status).toBe(503);
    expect(read.headers.get('retry-after')).toBe('5');
    expect(await read.json()).toMatchObject({ message: expect.stringMatching(/no worker answered/) });
    await stack.startWorker();
    const again = await eventually(async () => {
      const res = await stack.facade(`/applications/${merchantReference}`);
      return res.status === 503 ? undefined : res;
    });
    expect(again.status).toBe(200);
  });
});
