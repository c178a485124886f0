import { randomUUID } from 'node:crypto';
import { connectTestTemporal, eventually, withWorker, type TemporalTestContext } from '../helpers/temporal';
import { MerchantReference } from '../../src/shared/search-attributes';
import { pingSignal, receivedQuery, smokeWorkflow } from '../fixtures/smoke-workflows';

describe('Temporal test harness (real dev server)', () => {
  let t: TemporalTestContext;
  beforeAll(async () => {
    t = await connectTestTemporal();
  });
  afterAll(async () => t.close());

  it('runs a workflow, delivers a signal, and exposes a search attribute through the server', async () => {
    const reference = `smoke-${randomUUID()}`;
    await withWorker(
      {
        connection: t.nativeConnection,
        taskQueue: t.taskQueue,
        workflowsPath: require.resolve('../fixtures/smoke-workflows'),
      },
      async () => {
        const handle = await t.client.workflow.start(smokeWorkflow, {
          taskQueue: t.taskQueue,
          workflowId: reference,
          args: [{ reference, expected: 2 }],
        });
        await handle.signal(pingSignal, { message: 'one' });
        await eventually(async () => ((await handle.query(receivedQuery)).length === 1 ? true : undefined));
        await handle.signal(pingSignal, { message: 'two' });
        expect(await handle.result()).toEqual(['one', 'two']);

        // Visibility is eventually consistent: the server's list API finds the run by its search attribute.
        const found = await eventually(async () => {
          for await (const wf of t.client.workflow.list({ query: `MerchantReference = "${reference}"` })) {
            return wf;
          }
          return undefined;
        });
        expect(found.workflowId).toBe(reference);
        expect(found.typedSearchAttributes.get(MerchantReference)).toBe(reference);
      },
    );
  });
});
