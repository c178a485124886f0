/**
 * Duplicate applications at the bank, made visible
 * (docs/decisions/0022-duplicate-ids-believed-only-when-the-bank-confirms.md): the bank creates the application, then
 * answers 500; the create is retried and the bank creates a second one for the same reference. The workflow follows the
 * one it was answered; the other's webhooks (same reference, same hashed URL, another financeApplicationId), once a
 * status read of that id confirms it at the bank, show the duplicate to operators (search attribute, Web UI details)
 * and to the merchant (a signed callback). Another merchant's application named on a merchant's URL exists at the bank
 * too, and is believed no duplicate of it: it is not that reference's.
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { awaitFinanceApplication } from '../../src/client/finance-applications';
import { startMerchant } from '../activities/helpers/merchant-server';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, TEST_CALLBACK_SIGNING_SECRET, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { financeApplicationStateQuery } from '../../src/shared/finance-application';
import { financeApplicationWebhookUrl } from '../../src/security/webhook-hash';
import { TEST_MERCHANT } from '../helpers/merchants';

const KEY_B = 'duplicates-shop-b-key-0123456789abcdef';

describe('duplicate applications at the bank (whole stack)', () => {
  let merchant: Awaited<ReturnType<typeof startMerchant>>;
  let stack: TestStack;
  beforeAll(async () => {
    merchant = await startMerchant();
    stack = await startTestStack({
      merchantApiKeys: [
        { name: TEST_MERCHANT, key: 'duplicates-test-key-0123456789abcdef' },
        { name: 'shop-b', key: KEY_B },
      ],
      // Several merchants: each its own allow-list (no shared loopback default).
      merchantsFile: {
        merchants: {
          [TEST_MERCHANT]: {
            callbackAllowedOrigins: [new URL(merchant.url).origin],
            callbackSigningSecrets: [TEST_CALLBACK_SIGNING_SECRET],
          },
          'shop-b': { callbackAllowedOrigins: ['https://shop-b.example'] },
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await merchant?.close();
  });

  it('a create answered 500 after the bank acted, retried: the duplicate is searchable, in the details, and reaches the merchant', async () => {
    const ref = `dup-${randomUUID()}`;
    stack.sandbox.control.injectApiFault({ route: 'createApplication', kind: '5xx', status: 500, afterActing: true });
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference: ref,
        redirectUrl: 'https://shop.example/r',
        callbackUrl: merchant.url,
      }),
    });
    expect(res.status).toBe(201);
    const { financeApplicationId } = (await res.json()) as { financeApplicationId: string };

    // The bank's ground truth: two applications for one reference; the workflow kept the one it was answered.
    const atBank = stack.sandbox.control.applications().filter((a) => a.createRequest.merchantReference === ref);
    expect(atBank).toHaveLength(2);
    const orphan = atBank.find((a) => a.financeApplicationId !== financeApplicationId)!.financeApplicationId;

    const final = await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    expect(final.duplicateApplicationIds).toEqual([orphan]);
    expect(final.financeApplicationId).toBe(financeApplicationId);

    // Operators: a search attribute (visibility is eventually consistent) and the Web UI's details.
    const workflowId = financeApplicationWorkflowId(TEST_MERCHANT, ref);
    await eventually(async () => {
      for await (const wf of stack.t.client.workflow.list({ query: `DuplicateFinanceApplicationId = '${orphan}'` }))
        if (wf.workflowId === workflowId) return true;
      return undefined;
    }, 20_000);
    const metadata = await stack.t.client.workflow
      .getHandle(workflowId)
      .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`**Duplicate at the bank**: \`${orphan}\``);

    // The merchant: one signed event naming both ids.
    const reports = await eventually(() => {
      const found = merchant.received.filter((r) => r.body.includes('finance-application.duplicate-detected'));
      return found.length > 0 ? found : undefined;
    }, 20_000);
    expect(reports).toHaveLength(1);
    const event = new Webhook(TEST_CALLBACK_SIGNING_SECRET).verify(
      reports[0]!.body,
      reports[0]!.headers as Record<string, string>,
    );
    expect(event).toMatchObject({
      type: 'finance-application.duplicate-detected',
      data: { merchantReference: ref, financeApplicationId, duplicateFinanceApplicationId: orphan },
    });
    // The other id was read at the bank before it was believed (the sandbox knows it): once.
    const reads = stack.sandbox.control.apiCalls().filter((c) => c.route === 'getStatus' && c.path.includes(orphan));
    expect(reads).toHaveLength(1);
    expect(final.otherIds).toMatchObject({ reads: 1, notFound: 0, unchecked: 0 });
    // Recorded under CONFIRM_DUPLICATES_PATCH; `duplicate-application` (unread duplicates) stays for runs from before.
    recordFinanceHistory(await stack.t.client.workflow.getHandle(workflowId).fetchHistory(), 'duplicate-confirmed');
  });

  it("another merchant's application named on A's webhook URL exists at the bank, but is no duplicate of A's", async () => {
    const create = (key: string, merchantReference: string, callbackUrl?: string) =>
      fetch(`${stack.internalUrl}/applications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/r', callbackUrl }),
      });
    // B's application, recorded as B's (its FinanceApplicationId search attribute).
    const refB = `dup-b-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: refB });
    const theirs = ((await (await create(KEY_B, refB)).json()) as { financeApplicationId: string })
      .financeApplicationId;
    await eventually(async () => {
      for await (const wf of stack.t.client.workflow.list({ query: `FinanceApplicationId = '${theirs}'` }))
        if (wf.workflowId === financeApplicationWorkflowId('shop-b', refB)) return true;
      return undefined;
    }, 20_000);
    // A's, with a callback URL, waiting at the bank.
    const refA = `dup-a-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: refA });
    const created = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference: refA,
        redirectUrl: 'https://shop.example/r',
        callbackUrl: merchant.url,
      }),
    });
    expect(created.status).toBe(201);
    const before = merchant.received.length;

    // B's id posted to A's webhook URL (whoever holds the URL can post any id): the bank knows it, it is B's.
    const hook = await fetch(
      financeApplicationWebhookUrl(stack.publicUrl, stack.webhooks.hashSecret, refA, TEST_MERCHANT),
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ financeApplicationId: theirs }),
      },
    );
    expect(hook.status).toBe(202);
    const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, refA));
    const state = await eventually(async () => {
      const s = await handle.query(financeApplicationStateQuery);
      return (s.otherIds?.notFound ?? 0) > 0 ? s : undefined;
    }, 20_000);
    // Counted as not A's, never believed, reported, searchable or sent to A.
    expect(state.duplicateApplicationIds ?? []).toEqual([]);
    expect(state.otherIds).toMatchObject({ reads: 1, notFound: 1, unchecked: 0 });
    for await (const wf of stack.t.client.workflow.list({ query: `DuplicateFinanceApplicationId = '${theirs}'` }))
      throw new Error(`${wf.workflowId} believed another merchant's application a duplicate`);
    expect(merchant.received.slice(before).filter((r) => r.body.includes(theirs))).toEqual([]);
    for (const [merchantId, ref] of [
      [TEST_MERCHANT, refA],
      ['shop-b', refB],
    ] as const)
      await stack.t.client.workflow.getHandle(financeApplicationWorkflowId(merchantId, ref)).terminate('test done');
  });
});
