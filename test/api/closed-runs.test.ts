/**
 * Reading an application whose run has closed, when no worker can answer a query of it (whole stack). After a deploy
 * drains a build, a closed run's query goes to the build it was pinned to (Worker Versioning), whose workers are
 * gone: such a read must not depend on a worker. A completed run answers from its result (tested with the
 * rolling upgrade in `npm run test:cluster`); a failed one, which never reached the bank, from its description
 * (neverCreated in src/client/finance-application-reads.ts). Here the stack's worker is stopped, so a query could
 * never be answered.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { neverCreated } from '../../src/client/finance-application-reads';
import { financeApplicationWorkflowType, type FinanceApplicationInput } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { FinanceApplicationId, MerchantId } from '../../src/shared/search-attributes';
import { startTestStack, type TestStack } from '../helpers/stack';
import { TEST_MERCHANT } from '../helpers/merchants';

describe('a closed run read without a worker (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

  it('answers a run that failed before the bank created anything (callback URL refused) from its description: 200, done', async () => {
    const ref = `closed-${randomUUID()}`;
    const input: FinanceApplicationInput = {
      merchantId: TEST_MERCHANT,
      merchantReference: ref,
      application: { redirectUrl: 'https://shop.example/done' },
      // Not loopback, so outside the stack's allow-list: the worker refuses it and the run fails before the bank.
      callbackUrl: 'https://not-allowed.example/callbacks',
    };
    const handle = await stack.t.client.workflow.start(financeApplicationWorkflowType, {
      workflowId: financeApplicationWorkflowId(TEST_MERCHANT, ref),
      taskQueue: stack.t.taskQueue,
      args: [input],
      typedSearchAttributes: [{ key: MerchantId, value: TEST_MERCHANT }],
    });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(JSON.stringify(stack.sandbox.control.applications())).not.toContain(ref);

    // No worker from here: a query of the closed run would wait for one that never comes.
    await stack.stopWorker();
    const res = await stack.facade(`/applications/${ref}`, { signal: AbortSignal.timeout(15_000) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      merchantReference: ref,
      financeApplicationId: null,
      status: null,
      phase: 'closed',
      done: true,
      history: [],
    });
    stack.openApi.expectAllMatched();
  });

  it('queries instead when the failed run did record an application id (a failure this reading does not know)', () => {
    const at = new Date('2026-11-25T10:00:00Z');
    const withId = { get: (key: unknown) => (key === FinanceApplicationId ? 'fa-1' : undefined) };
    const withoutId = { get: () => undefined };
    const describe = (typedSearchAttributes: unknown) =>
      ({ typedSearchAttributes, startTime: at, closeTime: undefined }) as unknown as Parameters<typeof neverCreated>[0];
    expect(neverCreated(describe(withId), 'r-1')).toBeUndefined();
    expect(neverCreated(describe(withoutId), 'r-1')).toMatchObject({
      merchantReference: 'r-1',
      history: [],
      done: true,
      deadlineAt: at.toISOString(),
    });
  });
});
