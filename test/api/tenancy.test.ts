/**
 * Merchants as tenants on the whole stack (real dev server, the bank sandbox over HTTP, worker, both listeners):
 * two merchants with the same reference get two applications and never meet; each merchant's callbacks are signed
 * with its own secret and go only to its own origins; where merchants claim consents (CONSENT_ASSIGNMENT=merchant;
 * operators assign them by default: test/api/consent-assignment.test.ts) a consent belongs to the merchant that
 * claimed it first; an account webhook for a consent nobody claimed starts nothing.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import {
  consentClaimWorkflowId,
  financeApplicationWorkflowId,
  lateAccountEventsWorkflowId,
  transactionEventsWorkflowId,
} from '../../src/shared/ids';
import { transactionEventsStateQuery } from '../../src/shared/transaction-events';
import { MerchantId } from '../../src/shared/search-attributes';
import { startMerchant } from '../activities/helpers/merchant-server';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { recordConsentHistory, recordFinanceHistory } from '../helpers/histories';

const KEY_A = 'tenant-a-key-0123456789abcdefghijkl';
const KEY_B = 'tenant-b-key-0123456789abcdefghijkl';
const secret = (label: string) => `whsec_${Buffer.from(label.padEnd(32, '.')).toString('base64')}`;
const SECRET_A = secret('shop-a callback signing key');
const SECRET_B = secret('shop-b callback signing key');
const SECURITY_HEADER = 'Basic dGVuYW5jeTp3ZWJob29rcw==';
const HASH_SECRET = 'tenancy-webhook-hash-secret-0123456789abcdef';

type Merchant = Awaited<ReturnType<typeof startMerchant>>;

describe('merchants as tenants (whole stack)', () => {
  let stack: TestStack;
  let hooksA: Merchant;
  let hooksB: Merchant;
  beforeAll(async () => {
    hooksA = await startMerchant();
    hooksB = await startMerchant();
    const originA = new URL(hooksA.url).origin;
    const originB = new URL(hooksB.url).origin;
    stack = await startTestStack({
      hashSecret: HASH_SECRET,
      securityHeader: SECURITY_HEADER,
      merchantApiKeys: [
        { name: 'shop-a', key: KEY_A },
        { name: 'shop-b', key: KEY_B },
      ],
      merchantsFile: {
        merchants: {
          'shop-a': {
            callbackSigningSecrets: [SECRET_A],
            callbackAllowedOrigins: [originA],
            transactionsCallbackUrl: `${originA}/transactions`,
          },
          'shop-b': {
            callbackSigningSecrets: [SECRET_B],
            callbackAllowedOrigins: [originB],
            transactionsCallbackUrl: `${originB}/transactions`,
            minPollInterval: '5s',
          },
        },
      },
      sandbox: { lifecycle: { stepMs: 200 } },
      consentAssignment: 'merchant',
    });
  });
  afterAll(async () => {
    await stack?.close();
    await hooksA?.close();
    await hooksB?.close();
  });

  const as =
    (key: string) =>
    (path: string, init: RequestInit = {}) =>
      fetch(`${stack.internalUrl}${path}`, {
        ...init,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...init.headers },
      });
  const shopA = as(KEY_A);
  const shopB = as(KEY_B);
  const start = (call: typeof shopA, body: Record<string, unknown>) =>
    call('/applications', {
      method: 'POST',
      body: JSON.stringify({ redirectUrl: 'https://shop.example/done', ...body }),
    });
  const accountWebhook = (body: unknown) =>
    fetch(`${stack.publicUrl}/webhooks/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: SECURITY_HEADER },
      body: JSON.stringify(body),
    });
  /** Ends a run the test left open (a completed one is fine). */
  const finish = async (workflowId: string) =>
    stack.t.client.workflow
      .getHandle(workflowId)
      .terminate('test done')
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  const notFound = async (workflowId: string) =>
    expect(stack.t.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  const webhookCount = async (outcome: string) =>
    (await stack.metrics.webhooks.get()).values
      .filter((v) => v.labels.outcome === outcome)
      .reduce((sum, v) => sum + v.value, 0);

  it('gives two merchants with the same reference two applications; neither reads, lists, waits on or changes the other’s', async () => {
    const ref = `same-${randomUUID()}`;
    const a = await start(shopA, { merchantReference: ref, callbackUrl: hooksA.url });
    const b = await start(shopB, { merchantReference: ref, callbackUrl: hooksB.url });
    expect([a.status, b.status]).toEqual([201, 201]);
    const bodyA = (await a.json()) as { workflowId: string; financeApplicationId: string; bank: object };
    const bodyB = (await b.json()) as { workflowId: string; financeApplicationId: string; bank: object };
    expect(bodyA.workflowId).toBe(financeApplicationWorkflowId('shop-a', ref));
    expect(bodyB.workflowId).toBe(financeApplicationWorkflowId('shop-b', ref));
    expect(bodyA.financeApplicationId).not.toBe(bodyB.financeApplicationId);

    // Each bank application was given its own webhook URL: the same reference never shares a URL or a hash.
    const urlA = stack.sandbox.control.application(bodyA.financeApplicationId)!.createRequest.webhookUrl!;
    const urlB = stack.sandbox.control.application(bodyB.financeApplicationId)!.createRequest.webhookUrl!;
    expect(urlA).toContain(`/webhooks/finance-applications/shop-a~${ref}/`);
    expect(urlB).toContain(`/webhooks/finance-applications/shop-b~${ref}/`);
    expect(urlA.split('/').pop()).not.toBe(urlB.split('/').pop());

    // The same request again: each merchant reaches its own application (200), never the other's.
    const again = await start(shopB, { merchantReference: ref, callbackUrl: hooksB.url });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { financeApplicationId: string }).financeApplicationId).toBe(
      bodyB.financeApplicationId,
    );

    // Reads answer each merchant with its own.
    const readA = (await (await shopA(`/applications/${ref}`)).json()) as { financeApplicationId: string };
    const readB = (await (await shopB(`/applications/${ref}`)).json()) as { financeApplicationId: string };
    expect(readA.financeApplicationId).toBe(bodyA.financeApplicationId);
    expect(readB.financeApplicationId).toBe(bodyB.financeApplicationId);

    // Lists: each merchant lists only its own (visibility is eventually consistent).
    await eventually(async () => {
      const listed = async (call: typeof shopA) =>
        (
          (await (await call(`/applications?referencePrefix=${ref}`)).json()) as {
            applications: { financeApplicationId: string }[];
          }
        ).applications.map((x) => x.financeApplicationId);
      const [la, lb] = [await listed(shopA), await listed(shopB)];
      return la.length === 1 && lb.length === 1 ? { la, lb } : undefined;
    }).then(({ la, lb }) => {
      expect(la).toEqual([bodyA.financeApplicationId]);
      expect(lb).toEqual([bodyB.financeApplicationId]);
    });

    // Long-polls follow the caller's own application: shop-a's wait ends with shop-a's id.
    const waitA = await shopA(`/applications/${ref}?waitForChangeFrom=NO_SUCH_STATUS&timeout=1s`);
    expect(waitA.status).toBe(200);
    expect(((await waitA.json()) as { financeApplicationId: string }).financeApplicationId).toBe(
      bodyA.financeApplicationId,
    );

    // Each merchant's callbacks: signed with its own secret only, to its own endpoint only.
    await eventually(() => {
      const forA = hooksA.received.filter((r) => r.body.includes(bodyA.financeApplicationId));
      const forB = hooksB.received.filter((r) => r.body.includes(bodyB.financeApplicationId));
      return forA.length > 0 && forB.length > 0 ? true : undefined;
    });
    for (const r of hooksA.received) {
      expect(r.body).not.toContain(bodyB.financeApplicationId);
      expect(() => new Webhook(SECRET_A).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
      expect(() => new Webhook(SECRET_B).verify(r.body, r.headers as Record<string, string>)).toThrow();
    }
    for (const r of hooksB.received) {
      expect(r.body).not.toContain(bodyA.financeApplicationId);
      expect(() => new Webhook(SECRET_B).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
      expect(() => new Webhook(SECRET_A).verify(r.body, r.headers as Record<string, string>)).toThrow();
    }
    const handleA = stack.t.client.workflow.getHandle(bodyA.workflowId);
    await eventually(async () => ((await handleA.describe()).status.name === 'COMPLETED' ? true : undefined), 60_000);
    recordFinanceHistory(await handleA.fetchHistory(), 'tenant-signed-callbacks');
    for (const id of [bodyA.workflowId, bodyB.workflowId]) await finish(id);
  });

  it("refuses a callbackUrl on another merchant's origin (400), and answers 404 to another merchant's reference", async () => {
    const ref = `own-${randomUUID()}`;
    const refused = await start(shopB, { merchantReference: ref, callbackUrl: hooksA.url });
    expect(refused.status).toBe(400);
    // The list that applied is shop-b's own (MERCHANTS_FILE), not CALLBACK_ALLOWED_ORIGINS; the problem type is unchanged.
    const originA = new URL(hooksA.url).origin;
    expect(await refused.json()).toMatchObject({
      type: 'https://paylater.example/problems/callback-url-refused',
      message: `callbackUrl refused: callback origin ${originA} is not in MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-b"`,
      details: { field: 'callbackUrl', origin: originA, variable: 'MERCHANTS_FILE' },
    });
    await notFound(financeApplicationWorkflowId('shop-b', ref));

    const created = await start(shopA, { merchantReference: ref });
    expect(created.status).toBe(201);
    expect((await shopB(`/applications/${ref}`)).status).toBe(404);
    expect((await shopB(`/applications/${ref}?waitForChangeFrom=SUBMITTED&timeout=1s`)).status).toBe(404);
    const described = await stack.t.client.workflow.getHandle(financeApplicationWorkflowId('shop-a', ref)).describe();
    expect(described.typedSearchAttributes.get(MerchantId)).toBe('shop-a');
    await finish(financeApplicationWorkflowId('shop-a', ref));
  });

  it('holds each merchant to its own poll floor (MERCHANTS_FILE minPollInterval): 400 naming the field', async () => {
    const ref = `floor-${randomUUID()}`;
    const below = await start(shopB, { merchantReference: ref, settings: { fastPollInterval: '2s' } });
    expect(below.status).toBe(400);
    expect(await below.json()).toMatchObject({
      message: 'body field settings.fastPollInterval: must be at least 5s for this merchant',
    });
    await notFound(financeApplicationWorkflowId('shop-b', ref));
    // shop-a has no floor of its own: the global one (1s).
    const allowed = await start(shopA, { merchantReference: ref, settings: { fastPollInterval: '2s' } });
    expect(allowed.status).toBe(201);
    await finish(financeApplicationWorkflowId('shop-a', ref));
  });

  it('lets a consent belong to the merchant that claimed it first (CONSENT_ASSIGNMENT=merchant): the other gets 404 on every consent route', async () => {
    const consentId = `consent-${randomUUID()}`;
    const claimed = await shopA(`/consents/${consentId}`, { method: 'PUT' });
    expect(claimed.status).toBe(201);
    expect(await claimed.json()).toEqual({ consentId, merchantId: 'shop-a', claimed: true });
    expect((await shopA(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(200);
    expect((await shopA(`/consents/${consentId}`)).status).toBe(200);

    for (const [method, path, body] of [
      ['PUT', `/consents/${consentId}`],
      ['GET', `/consents/${consentId}`],
      ['DELETE', `/consents/${consentId}`],
      ['POST', `/consents/${consentId}/refresh`, '{}'],
      ['GET', `/consents/${consentId}/refresh`],
    ] as [string, string, string?][]) {
      const res = await shopB(path, { method, body });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
    }
    // shop-a's own refresh (it claimed the consent first).
    const refreshA = await shopA(`/consents/${consentId}/refresh`, { method: 'POST', body: '{}' });
    expect(refreshA.status).toBe(202);
    const shopATask = ((await refreshA.json()) as { taskId: string }).taskId;
    expect((await shopA(`/consents/${consentId}/refresh`)).status).toBe(200);
    // shop-b's refresh reached nothing at the bank.
    expect(stack.sandbox.control.refreshTasks().filter((t) => t.consentId === consentId)).toHaveLength(1);
    const claim = await stack.t.client.workflow.getHandle(consentClaimWorkflowId(consentId)).describe();
    expect(claim.typedSearchAttributes.get(MerchantId)).toBe('shop-a');

    // A transactionEvent of the claimed consent goes to its owner's transactions callback only.
    const accepted = await accountWebhook({ consentId, eventType: 'NEW', accounts: [{ accountId: 'acc-1' }] });
    expect(accepted.status).toBe(202);
    await eventually(() =>
      hooksA.received.some((r) => r.body.includes(consentId) && r.body.includes('acc-1')) ? true : undefined,
    );
    expect(hooksB.received.some((r) => r.body.includes(consentId))).toBe(false);
    const handedOffA = stack.t.client.workflow.getHandle(transactionEventsWorkflowId('shop-a', consentId));
    expect((await handedOffA.describe()).typedSearchAttributes.get(MerchantId)).toBe('shop-a');

    // Released, the consent may be claimed by another merchant.
    expect((await shopA(`/consents/${consentId}`, { method: 'DELETE' })).status).toBe(200);
    const released = stack.t.client.workflow.getHandle(consentClaimWorkflowId(consentId));
    expect(await released.result()).toMatchObject({ consentId, merchantId: 'shop-a', released: true });
    await recordConsentHistory('consent-claim-released', released);
    await eventually(async () =>
      (await shopB(`/consents/${consentId}`, { method: 'PUT' })).status === 201 ? true : undefined,
    );
    expect((await shopA(`/consents/${consentId}`)).status).toBe(404);
    // The new owner's events go to it alone, though shop-a's transactionEvents workflow is still open (it closes
    // when idle): the hand-off workflows are keyed by owner, and the release was seen by this process's receiver.
    expect((await handedOffA.describe()).status.name).toBe('RUNNING');
    const afterMove = await accountWebhook({ consentId, eventType: 'NEW', accounts: [{ accountId: 'acc-2' }] });
    expect(afterMove.status).toBe(202);
    expect(await afterMove.json()).toMatchObject({ workflowId: transactionEventsWorkflowId('shop-b', consentId) });
    const lateAfterMove = await accountWebhook({
      consentId,
      taskId: `task-after-move-${randomUUID()}`,
      taskStatus: 'FINISHED',
      bankCode: 'B9',
      bankName: 'Bank Nine',
      accounts: [{ accountId: 'acc-3', eventType: 'ADDED' }],
    });
    expect(lateAfterMove.status).toBe(202);
    expect(await lateAfterMove.json()).toMatchObject({ workflowId: lateAccountEventsWorkflowId('shop-b', consentId) });
    await eventually(() =>
      hooksB.received.some((r) => r.body.includes('acc-2')) && hooksB.received.some((r) => r.body.includes('acc-3'))
        ? true
        : undefined,
    );
    expect(hooksA.received.some((r) => r.body.includes('acc-2') || r.body.includes('acc-3'))).toBe(false);
    expect((await handedOffA.query(transactionEventsStateQuery)).events).toBe(1);
    const lateB = await stack.t.client.workflow.getHandle(lateAccountEventsWorkflowId('shop-b', consentId)).describe();
    expect(lateB.typedSearchAttributes.get(MerchantId)).toBe('shop-b');
    for (const id of [
      transactionEventsWorkflowId('shop-a', consentId),
      transactionEventsWorkflowId('shop-b', consentId),
      lateAccountEventsWorkflowId('shop-b', consentId),
    ])
      await finish(id);
    // shop-a's refresh of it stays shop-a's: the new owner does not read it, nor attach to it while it runs.
    expect((await shopB(`/consents/${consentId}/refresh`)).status).toBe(404);
    const attach = await shopB(`/consents/${consentId}/refresh`, { method: 'POST', body: '{}' });
    expect([409, 202]).toContain(attach.status); // 202 only once shop-a's refresh has ended: then shop-b's own
    if (attach.status === 202) expect(await attach.json()).not.toMatchObject({ taskId: shopATask });
    await finish(consentClaimWorkflowId(consentId));
  });

  it('starts nothing for an account webhook of a consent no merchant claimed: acknowledged, counted, logged', async () => {
    const consentId = `unclaimed-${randomUUID()}`;
    const before = await webhookCount('unclaimed');
    const transaction = await accountWebhook({ consentId, eventType: 'NEW', accounts: [{ accountId: 'acc-9' }] });
    const account = await accountWebhook({
      consentId,
      taskId: `task-${randomUUID()}`,
      taskStatus: 'FINISHED',
      bankCode: 'B1',
      bankName: 'Bank One',
      accounts: [{ accountId: 'acc-9', eventType: 'ADDED' }],
    });
    for (const res of [transaction, account]) {
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: 'ignored', reason: 'no merchant has claimed this consent' });
    }
    expect(await webhookCount('unclaimed')).toBe(before + 2);
    for (const id of [
      transactionEventsWorkflowId('shop-a', consentId),
      transactionEventsWorkflowId('shop-b', consentId),
      lateAccountEventsWorkflowId('shop-a', consentId),
      lateAccountEventsWorkflowId('shop-b', consentId),
      consentClaimWorkflowId(consentId),
    ])
      await notFound(id);
  });
});
