/**
 * Who owns a consent (docs/decisions/0046-consents-assigned-by-an-operator.md), on the whole stack (the suite's dev
 * server, the bank sandbox over HTTP, a worker, both listeners). With two merchants and CONSENT_ASSIGNMENT unset
 * (`auto`), operators assign consents and no merchant takes one by naming it; with `merchant`, a merchant's claim of
 * another's consent is refused. Either way another merchant's consent answers exactly as an unknown one, and a
 * refused claim is recorded for operators (metric, log line, the claim's state and search attribute).
 * The one-merchant default (merchants claim) is run by the other consent tests and test/docs/walkthrough.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  consentClaimWorkflowId,
  consentRefreshWorkflowId,
  lateAccountEventsWorkflowId,
  transactionEventsWorkflowId,
} from '../../src/shared/ids';
import { ConsentClaimConflict, MerchantId } from '../../src/shared/search-attributes';
import { ProblemType } from '../../src/api/problem-details';
import { startMerchant } from '../activities/helpers/merchant-server';
import { startTestStack, type TestStack, type TestStackOptions } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { recordConsentHistory } from '../helpers/histories';
import { claimTestConsent } from '../helpers/merchants';

const KEY_A = 'assign-a-key-0123456789abcdefghijkl';
const KEY_B = 'assign-b-key-0123456789abcdefghijkl';
const OPERATOR_KEY = 'assign-operator-key-0123456789abcdefgh';
const SECURITY_HEADER = 'Basic YXNzaWdubWVudDp3ZWJob29rcw==';

type Merchant = Awaited<ReturnType<typeof startMerchant>>;
type Call = (path: string, init?: RequestInit) => Promise<Response>;

/** Every consent route of the facade, as [method, path, body]: each must answer the same for A's and an unknown consent. */
const CONSENT_ROUTES = (consentId: string): [string, string, string?][] => [
  ['PUT', `/consents/${consentId}`],
  ['GET', `/consents/${consentId}`],
  ['DELETE', `/consents/${consentId}`],
  ['POST', `/consents/${consentId}/refresh`, '{}'],
  ['GET', `/consents/${consentId}/refresh`],
];

/** Headers that differ between any two answers (the time, the request's id, the budget left), whatever they are for. */
const PER_REQUEST_HEADERS = new Set(['date', 'x-request-id', 'ratelimit', 'etag']);

/** An answer as the caller sees it, with the consent id in its body replaced (the two ids have the same length). */
async function seen(call: Call, method: string, path: string, consentId: string, body?: string) {
  const res = await call(path, { method, body });
  return {
    route: `${method} ${path.replace(consentId, '{consentId}')}`,
    status: res.status,
    headers: Object.fromEntries([...res.headers].filter(([name]) => !PER_REQUEST_HEADERS.has(name))),
    body: (await res.text()).replaceAll(consentId, '{consentId}'),
  };
}

/** A consent id; every one has the same length, so an answer's Content-Length cannot tell two ids apart. */
const newConsentId = () => `c-${randomUUID()}`;

async function twoMerchantStack(hooks: { a: Merchant; b: Merchant }, lines: Record<string, unknown>[], more = {}) {
  const originA = new URL(hooks.a.url).origin;
  const originB = new URL(hooks.b.url).origin;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return startTestStack({
    securityHeader: SECURITY_HEADER,
    // shop-a is listed first: it is the legacy merchant, which may read refreshes of consents nobody claimed.
    merchantApiKeys: [
      { name: 'shop-a', key: KEY_A },
      { name: 'shop-b', key: KEY_B },
    ],
    operatorApiKeys: [{ name: 'ops-alice', key: OPERATOR_KEY }],
    merchantsFile: {
      merchants: {
        'shop-a': { callbackAllowedOrigins: [originA], transactionsCallbackUrl: `${originA}/transactions` },
        'shop-b': { callbackAllowedOrigins: [originB], transactionsCallbackUrl: `${originB}/transactions` },
      },
    },
    logger: pino({ level: 'info' }, sink),
    ...more,
  } satisfies TestStackOptions);
}

describe('consents with two merchants (whole stack)', () => {
  let hooks: { a: Merchant; b: Merchant };
  const lines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    hooks = { a: await startMerchant(), b: await startMerchant() };
  });
  afterAll(async () => {
    await hooks?.a.close();
    await hooks?.b.close();
  });

  const callAs =
    (stack: () => TestStack, key: string): Call =>
    (path, init = {}) =>
      fetch(`${stack().internalUrl}${path}`, {
        ...init,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...init.headers },
      });
  /** Ends a run the test left open (a completed one is fine). */
  const finish = (stack: TestStack, workflowId: string) =>
    stack.t.client.workflow
      .getHandle(workflowId)
      .terminate('test done')
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  const notStarted = (stack: TestStack, workflowId: string) =>
    expect(stack.t.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  const conflicts = async (stack: TestStack, labels: Record<string, string>) =>
    (await stack.metrics.consentClaimConflicts.get()).values
      .filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k as keyof typeof v.labels] === value))
      .reduce((sum, v) => sum + v.value, 0);

  describe('CONSENT_ASSIGNMENT unset (auto): operators assign consents', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await twoMerchantStack(hooks, lines);
    });
    afterAll(async () => stack?.close());
    afterEach(() => stack?.openApi.expectAllMatched());

    const shopA = callAs(() => stack, KEY_A);
    const shopB = callAs(() => stack, KEY_B);
    const operator = callAs(() => stack, OPERATOR_KEY);
    const assign = (consentId: string, body: Record<string, unknown>) =>
      operator(`/operator/consents/${consentId}`, { method: 'PUT', body: JSON.stringify(body) });
    const accountWebhook = (body: unknown) =>
      fetch(`${stack.publicUrl}/webhooks/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: SECURITY_HEADER },
        body: JSON.stringify(body),
      });

    it("answers another merchant's consent exactly as an unknown one, on every consent route, whoever asks", async () => {
      const ofA = newConsentId();
      const ofB = newConsentId();
      // Owned through the typed client (trusted, it claims whatever the rule): the answers, not the assignment, are
      // under test here.
      await claimTestConsent(stack.t, ofA, 'shop-a');
      await claimTestConsent(stack.t, ofB, 'shop-b');
      // shop-b asks for shop-a's; shop-a, the legacy merchant, for shop-b's.
      for (const [asker, theirs] of [
        [shopB, ofA],
        [shopA, ofB],
      ] as const) {
        const unknown = newConsentId();
        for (const [method, path, body] of CONSENT_ROUTES(theirs)) {
          const another = await seen(asker, method, path, theirs, body);
          const none = await seen(asker, method, path.replace(theirs, unknown), unknown, body);
          expect(another).toEqual(none);
          expect(another.status).toBe(404);
        }
        await notStarted(stack, consentClaimWorkflowId(unknown));
        await notStarted(stack, consentRefreshWorkflowId(unknown));
      }
      // Nothing moved: each consent is still its owner's, and no refresh reached the bank.
      expect((await shopA(`/consents/${ofA}`)).status).toBe(200);
      expect((await shopB(`/consents/${ofB}`)).status).toBe(200);
      expect(stack.sandbox.control.refreshTasks().filter((t) => [ofA, ofB].includes(t.consentId))).toEqual([]);
      for (const id of [ofA, ofB]) await finish(stack, consentClaimWorkflowId(id));
    });

    it('lets no merchant take a consent by naming it: a claim or refresh of one no operator assigned is a 404, and starts nothing', async () => {
      const consentId = newConsentId();
      for (const call of [shopA, shopB]) {
        const claim = await call(`/consents/${consentId}`, { method: 'PUT' });
        expect(claim.status).toBe(404);
        expect(await claim.json()).toMatchObject({
          type: ProblemType.NotFound,
          detail: `No consent ${consentId} for this merchant`,
        });
        expect((await call(`/consents/${consentId}/refresh`, { method: 'POST', body: '{}' })).status).toBe(404);
      }
      await notStarted(stack, consentClaimWorkflowId(consentId));
      await notStarted(stack, consentRefreshWorkflowId(consentId));
      expect(stack.sandbox.control.refreshTasks().filter((t) => t.consentId === consentId)).toEqual([]);
      // Its account webhooks still start nothing: nobody owns it.
      const ignored = await accountWebhook({ consentId, eventType: 'NEW', accounts: [{ accountId: 'acc-0' }] });
      expect(await ignored.json()).toMatchObject({ status: 'ignored' });
    });

    it('assigns, reassigns and releases a consent through the operator routes, behind an operator key', async () => {
      const consentId = newConsentId();
      const path = `/operator/consents/${consentId}`;
      const body = JSON.stringify({ merchantId: 'shop-a' });
      // Operators only: no key 401, a merchant's key 401 as an unknown one; nothing assigned.
      expect((await fetch(`${stack.internalUrl}${path}`, { method: 'PUT', body })).status).toBe(401);
      for (const call of [shopA, shopB]) expect((await call(path, { method: 'PUT', body })).status).toBe(401);
      expect((await shopA(path)).status).toBe(401);
      await notStarted(stack, consentClaimWorkflowId(consentId));
      // A merchant the deployment does not have, or another field: 400 naming it.
      const unknownMerchant = await assign(consentId, { merchantId: 'shop-z' });
      expect(unknownMerchant.status).toBe(400);
      expect(await unknownMerchant.json()).toMatchObject({
        type: ProblemType.Validation,
        errors: [{ in: 'body', field: 'merchantId', detail: 'no merchant "shop-z" in MERCHANT_API_KEYS' }],
      });
      expect((await assign(consentId, { merchantId: 'shop-a', owner: 'x' })).status).toBe(400);
      await notStarted(stack, consentClaimWorkflowId(consentId));

      // Assigned to shop-a: its own from now on, and only its.
      const assigned = await assign(consentId, { merchantId: 'shop-a' });
      expect(assigned.status).toBe(201);
      expect(assigned.headers.get('location')).toBe(path);
      expect(await assigned.json()).toEqual({
        consentId,
        merchantId: 'shop-a',
        assignedNow: true,
        previousMerchantId: null,
      });
      expect(await (await assign(consentId, { merchantId: 'shop-a' })).json()).toMatchObject({ assignedNow: false });
      const confirmed = await shopA(`/consents/${consentId}`, { method: 'PUT' });
      expect(confirmed.status).toBe(200);
      expect(await confirmed.json()).toEqual({ consentId, merchantId: 'shop-a', claimed: true });
      expect((await shopB(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(404);
      const claim = await stack.t.client.workflow.getHandle(consentClaimWorkflowId(consentId)).describe();
      expect(claim.typedSearchAttributes.get(MerchantId)).toBe('shop-a');
      // Its transactionEvents go to shop-a, whose refresh reaches the bank.
      const event = await accountWebhook({ consentId, eventType: 'NEW', accounts: [{ accountId: 'acc-a' }] });
      expect(await event.json()).toMatchObject({ workflowId: transactionEventsWorkflowId('shop-a', consentId) });
      await eventually(() => (hooks.a.received.some((r) => r.body.includes('acc-a')) ? true : undefined));
      expect(hooks.b.received.some((r) => r.body.includes(consentId))).toBe(false);
      expect((await shopA(`/consents/${consentId}/refresh`, { method: 'POST', body: '{}' })).status).toBe(202);
      expect(stack.sandbox.control.refreshTasks().filter((t) => t.consentId === consentId)).toHaveLength(1);

      // Another merchant's consent is not given away by mistake: 409 naming the owner, unless reassign.
      const held = await assign(consentId, { merchantId: 'shop-b' });
      expect(held.status).toBe(409);
      expect(await held.json()).toMatchObject({ type: ProblemType.Conflict, details: { owner: 'shop-a' } });
      const moved = await assign(consentId, { merchantId: 'shop-b', reassign: true });
      expect(moved.status).toBe(201);
      expect(await moved.json()).toEqual({
        consentId,
        merchantId: 'shop-b',
        assignedNow: true,
        previousMerchantId: 'shop-a',
      });
      expect((await shopA(`/consents/${consentId}`)).status).toBe(404);
      expect((await shopB(`/consents/${consentId}`)).status).toBe(200);
      const afterMove = await accountWebhook({ consentId, eventType: 'NEW', accounts: [{ accountId: 'acc-b' }] });
      expect(await afterMove.json()).toMatchObject({ workflowId: transactionEventsWorkflowId('shop-b', consentId) });
      const read = await operator(path);
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual({
        consentId,
        merchantId: 'shop-b',
        claimedAt: expect.any(String),
        assignedBy: 'ops-alice',
        conflicts: [],
      });

      // Released by an operator: nobody's, until assigned again.
      const released = await operator(path, { method: 'DELETE' });
      expect(released.status).toBe(200);
      expect(await released.json()).toEqual({ consentId, merchantId: 'shop-b', released: true });
      expect((await operator(path)).status).toBe(404);
      expect((await operator(path, { method: 'DELETE' })).status).toBe(404);
      expect((await shopB(`/consents/${consentId}`)).status).toBe(404);
      expect(lines).toContainEqual(
        expect.objectContaining({ msg: 'consent assigned by an operator', operator: 'ops-alice', consentId }),
      );
      for (const id of [
        consentRefreshWorkflowId(consentId),
        transactionEventsWorkflowId('shop-a', consentId),
        transactionEventsWorkflowId('shop-b', consentId),
        lateAccountEventsWorkflowId('shop-a', consentId),
      ])
        await finish(stack, id);
    });

    it("records a refused claim of another merchant's consent for operators: metric, log line, search attribute, state", async () => {
      const consentId = newConsentId();
      expect((await assign(consentId, { merchantId: 'shop-a' })).status).toBe(201);
      const before = await conflicts(stack, { merchant: 'shop-b', owner: 'shop-a' });
      lines.length = 0;
      expect((await shopB(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(404);
      expect((await shopB(`/consents/${consentId}/refresh`, { method: 'POST', body: '{}' })).status).toBe(404);
      // Reads are no claim: not counted.
      expect((await shopB(`/consents/${consentId}`)).status).toBe(404);

      expect(await conflicts(stack, { merchant: 'shop-b', owner: 'shop-a' })).toBe(before + 2);
      const refused = lines.filter((l) => l.msg === "consent claim refused: another merchant's consent");
      expect(refused).toEqual([
        expect.objectContaining({ level: 40, merchant: 'shop-b', owner: 'shop-a', consentId, via: 'claim' }),
        expect.objectContaining({ level: 40, merchant: 'shop-b', owner: 'shop-a', consentId, via: 'refresh' }),
      ]);
      for (const secret of [KEY_A, KEY_B, OPERATOR_KEY]) expect(JSON.stringify(lines)).not.toContain(secret);

      // On the claim: the search attribute operators list conflicts with, and the state the operator route reads.
      const handle = stack.t.client.workflow.getHandle(consentClaimWorkflowId(consentId));
      await eventually(async () =>
        (await handle.describe()).typedSearchAttributes.get(ConsentClaimConflict) === 'shop-b' ? true : undefined,
      );
      await eventually(async () => {
        for await (const wf of stack.t.client.workflow.list({
          query: `ConsentClaimConflict IS NOT NULL AND ConsentId = '${consentId}'`,
        }))
          if (wf.workflowId === consentClaimWorkflowId(consentId)) return true;
        return undefined;
      });
      const read = await operator(`/operator/consents/${consentId}`);
      expect(await read.json()).toMatchObject({
        merchantId: 'shop-a',
        assignedBy: 'ops-alice',
        // One record per merchant and API process in a while: the refresh right after the claim is counted only.
        conflicts: [{ merchantId: 'shop-b', count: 1, firstAt: expect.any(String), lastAt: expect.any(String) }],
      });
      // The owner's own claim is no conflict, and the claim is still shop-a's.
      expect((await shopA(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(200);
      expect((await handle.describe()).typedSearchAttributes.get(MerchantId)).toBe('shop-a');

      expect((await operator(`/operator/consents/${consentId}`, { method: 'DELETE' })).status).toBe(200);
      expect(await handle.result()).toMatchObject({ merchantId: 'shop-a', released: true, assignedBy: 'ops-alice' });
      await recordConsentHistory('consent-claim-v2-assigned-conflict-released', handle);
    });
  });

  describe('CONSENT_ASSIGNMENT=merchant: merchants claim, a claim of another merchant’s consent is refused', () => {
    let stack: TestStack;
    beforeAll(async () => {
      stack = await twoMerchantStack(hooks, lines, { consentAssignment: 'merchant' });
    });
    afterAll(async () => stack?.close());
    afterEach(() => stack?.openApi.expectAllMatched());

    const shopA = callAs(() => stack, KEY_A);
    const shopB = callAs(() => stack, KEY_B);

    it("refuses B's claim and refresh of A's consent, keeps it A's, records the conflict, and tells B nothing on reads", async () => {
      const consentId = newConsentId();
      expect((await shopA(`/consents/${consentId}`, { method: 'PUT' })).status).toBe(201);
      const before = await conflicts(stack, { merchant: 'shop-b', owner: 'shop-a' });

      const claim = await shopB(`/consents/${consentId}`, { method: 'PUT' });
      expect(claim.status).toBe(404);
      expect(await claim.json()).toMatchObject({ detail: `No consent ${consentId} for this merchant` });
      expect((await shopB(`/consents/${consentId}/refresh`, { method: 'POST', body: '{}' })).status).toBe(404);
      expect(stack.sandbox.control.refreshTasks().filter((t) => t.consentId === consentId)).toEqual([]);
      expect(await conflicts(stack, { merchant: 'shop-b', owner: 'shop-a' })).toBe(before + 2);
      const handle = stack.t.client.workflow.getHandle(consentClaimWorkflowId(consentId));
      expect((await handle.describe()).typedSearchAttributes.get(MerchantId)).toBe('shop-a');
      expect((await shopA(`/consents/${consentId}`)).status).toBe(200);
      await eventually(async () =>
        (await handle.describe()).typedSearchAttributes.get(ConsentClaimConflict) === 'shop-b' ? true : undefined,
      );

      // Reading or releasing A's consent answers B as an unknown consent does (a claim of an unknown one would
      // claim it: that answer necessarily differs, which is why `auto` leaves two merchants' consents to operators).
      const unknown = newConsentId();
      for (const [method, path, body] of CONSENT_ROUTES(consentId).filter(([m]) => m === 'GET' || m === 'DELETE')) {
        expect(await seen(shopB, method, path, consentId, body)).toEqual(
          await seen(shopB, method, path.replace(consentId, unknown), unknown, body),
        );
      }
      expect((await shopA(`/consents/${consentId}`)).status).toBe(200);
      await finish(stack, consentClaimWorkflowId(consentId));
    });
  });
});
