/**
 * An application the bank no longer knows (404 on the status read of an application it created), on the whole
 * stack: the sandbox forgets every application (reset, as a sandbox restarted without its memory did), and the
 * workflow reports it (FinanceApplicationStatus UNKNOWN_AT_BANK, its state, one log line) and slows its polling.
 * The end after a day of 404s is in test/workflows/finance-application.time-skipping.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { FinanceApplicationStatus } from '../../src/shared/search-attributes';
import { financeApplicationStateQuery, UNKNOWN_AT_BANK_STATUS } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { TEST_MERCHANT } from '../helpers/merchants';

describe('an application the bank no longer knows (whole stack)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

  it('is reported once as UNKNOWN_AT_BANK and polled at the slow interval, not every few seconds', async () => {
    const ref = `forgotten-${randomUUID()}`;
    // The bank keeps it at CREATED; the merchant asks for a fast poll (1 s) and a slow interval of 1 h.
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference: ref,
        redirectUrl: 'https://shop.example/return',
        settings: { fastPollInterval: '1s', slowPollInterval: '1h', noWebhookPollInterval: '1h' },
      }),
    });
    expect(res.status).toBe(201);
    const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref));
    // A poll read while the bank knows it (unchanged reads are the polling activity's retries, not in the state).
    const reads = (status: number) =>
      stack.sandbox.control.apiCalls().filter((c) => c.route === 'getStatus' && c.status === status).length;
    await eventually(() => (reads(200) > 0 ? true : undefined));

    stack.sandbox.control.reset(); // the bank forgets every application
    const state = await eventually(async () => {
      const s = await handle.query(financeApplicationStateQuery);
      return s.unknownAtBank ? s : undefined;
    });
    expect(state).toMatchObject({ done: false, status: 'CREATED', unknownAtBank: { reads: 1 } });
    const attribute = await eventually(async () => {
      const value = (await handle.describe()).typedSearchAttributes.get(FinanceApplicationStatus);
      return value === UNKNOWN_AT_BANK_STATUS ? value : undefined;
    });
    expect(attribute).toBe(UNKNOWN_AT_BANK_STATUS);
    // The bank saw the 404 read; with a 1 s fast interval, polling would have read again several times by now.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(reads(404)).toBe(1);
    expect((await handle.query(financeApplicationStateQuery)).unknownAtBank!.reads).toBe(1);

    await handle.terminate('test over');
    recordFinanceHistory(await handle.fetchHistory(), 'unknown-at-bank');
  });
});
