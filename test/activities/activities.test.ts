import type { LookupAddress } from 'node:dns';
import { ApplicationFailureCategory, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Webhook } from 'standardwebhooks';
import type { Agent } from 'undici';
import {
  createActivities,
  createBankClient,
  createCallbackDispatcher,
  type BankClientHandle,
} from '../../src/activities';
import type { Activities } from '../../src/activities/types';
import { financeApplicationWebhookUrl, isValidWebhookHash } from '../../src/security/webhook-hash';
import { guardedLookup } from '../../src/activities/merchant-callback';
import {
  BankFailureType,
  CALLBACK_GIVEN_UP,
  CALLBACK_NOT_ALLOWED,
  CALLBACK_REJECTED,
  CALLBACK_UNAVAILABLE,
} from '../../src/shared/failure-types';
import type { CallbackReport } from '../../src/shared/undelivered-callbacks';
import { deriveCallbackSigningSecret } from '../../src/security/merchant-signing-secret';
import { closedPortUrl, hang, reply, startFakeBank, type FakeBank } from './helpers/fake-bank';
import { captureLogs } from './helpers/log-capture';
import { failureOf, runActivity } from './helpers/run-activity';
import { startMerchant } from './helpers/merchant-server';

const clientId = 'merchant-app';
const clientSecret = 'activities-client-secret-91c2';
const webhooks = { publicBaseUrl: 'https://paylater.example.com/', hashSecret: 'hash-secret-for-tests' };
const signingSecret = `whsec_${Buffer.from('activities-test callback signing key 0001').toString('base64')}`;
/** The local merchant (127.0.0.1) is allowed as on the embedded stack; callbacks signed with signingSecret. */
const callbackDeps = { allowList: { origins: [], loopback: true }, signingSecrets: [signingSecret] };

describe('activities (MockActivityEnvironment, real client, real HTTP)', () => {
  let bank: FakeBank;
  let handle: BankClientHandle;
  let callbacks: Agent;
  let activities: Activities;
  let env: MockActivityEnvironment;
  let logs: ReturnType<typeof captureLogs>;

  // Long enough for a token and a call on a loaded 2-core machine (500 ms was not, in a CI run); a hanging peer
  // waits this long.
  const CALL_TIMEOUT_MS = 2_000;
  beforeEach(async () => {
    logs = captureLogs();
    bank = await startFakeBank({ clientId, clientSecret });
    handle = createBankClient({
      authUrl: bank.url,
      baseUrl: bank.url,
      clientId,
      clientSecret,
      callTimeoutMs: CALL_TIMEOUT_MS,
      logger: logs.logger,
    });
    callbacks = createCallbackDispatcher({ timeoutMs: CALL_TIMEOUT_MS });
    activities = createActivities({
      bank: handle.client,
      webhooks,
      callbacks: callbackDeps,
      callbackDispatcher: callbacks,
      callbackTimeoutMs: CALL_TIMEOUT_MS,
    });
    env = new MockActivityEnvironment(
      {
        workflowExecution: { workflowId: 'finance-application:ref-1', runId: '0d4c5a1e-0000-4000-8000-000000000001' },
        // First scheduled now: the callback's retry window (3 days by default) runs from here.
        scheduledTimestampMs: Date.now(),
      },
      { logger: logs.logger },
    );
  });
  afterEach(async () => {
    await handle.close();
    await callbacks.close();
    await bank.close();
  });

  describe('createApplication', () => {
    it('merges the hashed webhookUrl into the merchant body and returns the whole bank response', async () => {
      const created = await runActivity(env, activities.createApplication, {
        merchantId: 'test',
        merchantReference: 'ref-1',
        application: { redirectUrl: 'https://shop.example/back', amount: 250, webhookUrl: 'https://evil.example/' },
      });
      expect(created).toEqual({
        financeApplicationId: expect.any(String),
        status: 'CREATED',
        bankReference: expect.any(String),
      });

      const sent = JSON.parse(bank.requests.find((r) => r.route === 'createApplication')!.body) as Record<
        string,
        string
      >;
      const expectedUrl = financeApplicationWebhookUrl(webhooks.publicBaseUrl, webhooks.hashSecret, 'ref-1', 'test');
      expect(sent).toEqual({ redirectUrl: 'https://shop.example/back', amount: 250, webhookUrl: expectedUrl });
      expect(expectedUrl.startsWith('https://paylater.example.com/webhooks/finance-applications/test~ref-1/')).toBe(
        true,
      );
      expect(isValidWebhookHash(webhooks.hashSecret, 'ref-1', expectedUrl.split('/').at(-1)!, 'test')).toBe(true);
    });
  });

  it('getApplicationStatus and startRefresh return the bank answers', async () => {
    await expect(
      runActivity(env, activities.getApplicationStatus, { financeApplicationId: 'fa-9', merchantReference: 'ref-1' }),
    ).resolves.toMatchObject({ financeApplicationId: 'fa-9', status: 'IN_PROGRESS' });
    await expect(runActivity(env, activities.startRefresh, { consentId: 'consent-1' })).resolves.toEqual({
      taskId: expect.any(String),
    });
  });

  describe('each bank error class becomes the intended ApplicationFailure', () => {
    const status = { financeApplicationId: 'fa-1', merchantReference: 'ref-1' };

    it('4xx → BankRejected, non-retryable, status in details', async () => {
      bank.override('getApplicationStatus', reply(400, { error: 'not_found', message: 'no such application' }));
      const failure = await failureOf(runActivity(env, activities.getApplicationStatus, status));
      expect(failure.type).toBe(BankFailureType.Rejected);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.details?.[0]).toMatchObject({
        status: 400,
        bankError: 'not_found',
        bankMessage: 'no such application',
      });
    });

    it('404 on the status read → BankApplicationUnknown, non-retryable, benign (the workflow reports it once)', async () => {
      bank.override('getApplicationStatus', reply(404, { error: 'not_found', message: 'no such application' }));
      const failure = await failureOf(runActivity(env, activities.getApplicationStatus, status));
      expect(failure.type).toBe(BankFailureType.ApplicationUnknown);
      expect(failure.category).toBe(ApplicationFailureCategory.BENIGN);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.details?.[0]).toMatchObject({
        status: 404,
        bankError: 'not_found',
        bankMessage: 'no such application',
      });
    });

    it('401 twice → BankUnauthorized, non-retryable', async () => {
      bank.override('getApplicationStatus', reply(401, { error: 'invalid_token' }), 2);
      const failure = await failureOf(runActivity(env, activities.getApplicationStatus, status));
      expect(failure.type).toBe(BankFailureType.Unauthorized);
      expect(failure.nonRetryable).toBe(true);
    });

    it('429 → BankRateLimited, retryable, nextRetryDelay from Retry-After', async () => {
      bank.override('startRefresh', reply(429, { error: 'slow_down' }, { 'retry-after': '3' }));
      const failure = await failureOf(runActivity(env, activities.startRefresh, { consentId: 'consent-1' }));
      expect(failure.type).toBe(BankFailureType.RateLimited);
      expect(failure.nonRetryable).toBe(false);
      expect(failure.nextRetryDelay).toBe(3000);
    });

    it('5xx → BankUnavailable, retryable', async () => {
      bank.override('getApplicationStatus', reply(502, 'bad gateway'));
      const failure = await failureOf(runActivity(env, activities.getApplicationStatus, status));
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
      expect(failure.details?.[0]).toMatchObject({ status: 502 });
    });

    it('connection refused → BankUnavailable, retryable', async () => {
      const down = await closedPortUrl();
      const unreachable = createBankClient({ authUrl: down, baseUrl: down, clientId, clientSecret });
      try {
        const acts = createActivities({ bank: unreachable.client, webhooks });
        const failure = await failureOf(runActivity(env, acts.getApplicationStatus, status));
        expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
        expect(failure.details?.[0]).toMatchObject({ code: 'ECONNREFUSED' });
      } finally {
        await unreachable.close();
      }
    });

    it('timeout (a bank that never answers) → BankUnavailable, retryable', async () => {
      bank.override('getApplicationStatus', hang);
      const failure = await failureOf(runActivity(env, activities.getApplicationStatus, status));
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
      expect(failure.details?.[0]).toMatchObject({ code: 'TIMEOUT' });
    });

    it('invalid 2xx body → BankInvalidResponse, non-retryable', async () => {
      bank.override('createApplication', reply(201, { id: 'no financeApplicationId here' }));
      const failure = await failureOf(
        runActivity(env, activities.createApplication, {
          merchantId: 'test',
          merchantReference: 'ref-1',
          application: { redirectUrl: 'https://x' },
        }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.InvalidResponse, true]);
    });
  });

  it('activity cancellation aborts the HTTP request and surfaces as a cancellation', async () => {
    const slow = createBankClient({ authUrl: bank.url, baseUrl: bank.url, clientId, clientSecret });
    try {
      bank.override('getApplicationStatus', hang);
      const acts = createActivities({ bank: slow.client, webhooks });
      const running = runActivity(env, acts.getApplicationStatus, {
        financeApplicationId: 'fa-1',
        merchantReference: 'ref-1',
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      env.cancel();
      await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    } finally {
      await slow.close();
    }
  });

  describe('notifyMerchant', () => {
    let merchant: Awaited<ReturnType<typeof startMerchant>>;
    beforeEach(async () => {
      merchant = await startMerchant();
    });
    afterEach(async () => {
      await merchant.close();
    });
    const event = { type: 'finance-application.status-changed', status: 'APPROVED', at: '2026-11-25T10:00:00.000Z' };
    /** The body in the current payload version (src/activities/callback-payload.ts). */
    const payload = {
      type: 'finance-application.status-changed',
      timestamp: '2026-11-25T10:00:00.000Z',
      data: { status: 'APPROVED', at: '2026-11-25T10:00:00.000Z' },
    };

    it('POSTs the event as JSON (Standard Webhooks payload, current version) with the Idempotency-Key header', async () => {
      await expect(
        runActivity(env, activities.notifyMerchant, {
          merchantId: 'test',
          url: merchant.url,
          idempotencyKey: 'ref-1:APPROVED',
          event,
        }),
      ).resolves.toEqual({
        delivered: true,
        status: 200,
        attempt: 1, // the workflow records it (src/shared/merchant-callbacks.ts)
      });
      const [got] = merchant.received;
      expect(got!.headers['idempotency-key']).toBe('ref-1:APPROVED');
      expect(got!.headers['content-type']).toBe('application/json');
      expect(got!.headers['callback-payload-version']).toBe('2026-11-25');
      expect(JSON.parse(got!.body)).toEqual(payload);
    });

    it('4xx → MerchantCallbackRejected, non-retryable', async () => {
      merchant.answerNext(410);
      const failure = await failureOf(
        runActivity(env, activities.notifyMerchant, {
          merchantId: 'test',
          url: merchant.url,
          idempotencyKey: 'k',
          event,
        }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([CALLBACK_REJECTED, true]);
      // The merchant's status and this attempt, for the workflow's record of the delivery.
      expect(failure.details?.[0]).toEqual({ status: 410, attempt: 1 });
    });

    it('5xx and connection refused → retryable', async () => {
      merchant.answerNext(500);
      const failure = await failureOf(
        runActivity(env, activities.notifyMerchant, {
          merchantId: 'test',
          url: merchant.url,
          idempotencyKey: 'k',
          event,
        }),
      );
      expect(failure.nonRetryable).toBe(false);
      const refused = await failureOf(
        runActivity(env, activities.notifyMerchant, {
          merchantId: 'test',
          url: `${await closedPortUrl()}/hook`,
          idempotencyKey: 'k',
          event,
        }),
      );
      expect(refused.nonRetryable).toBe(false);
    });

    it("within the merchant's retry window: retried after the backoff, its first failure told to the ledger; after it: given up, told and counted", async () => {
      const reports: { merchantId: string; report: CallbackReport }[] = [];
      const givenUp: string[] = [];
      const windowed = createActivities({
        bank: handle.client,
        webhooks,
        callbacks: callbackDeps,
        callbackDispatcher: callbacks,
        callbackTimeoutMs: 500,
        merchants: {
          resolve: (id) => ({ id: id ?? 'legacy', callbacks: { ...callbackDeps, retryWindowMs: 60_000 } }),
        },
        callbackLedger: {
          report: (merchantId, report) => Promise.resolve(void reports.push({ merchantId, report })),
          read: () => Promise.resolve({ callbacks: [], dropped: 0 }),
        },
        metrics: {
          merchantCallbacks: { inc: () => undefined },
          callbacksGivenUp: { inc: ({ merchant: m }) => void givenUp.push(m) },
        },
      });
      const workflowExecution = {
        workflowId: 'finance-application:shop-a:r',
        runId: '0d4c5a1e-0000-4000-8000-00000000000a',
      };
      const input = { merchantId: 'shop-a', url: merchant.url, idempotencyKey: 'shop-a:k', event };
      merchant.answerNext(503);
      const early = new MockActivityEnvironment({ workflowExecution, scheduledTimestampMs: Date.now(), attempt: 1 });
      const retried = await failureOf(runActivity(early, windowed.notifyMerchant, input));
      expect([retried.type, retried.nonRetryable, retried.nextRetryDelay]).toEqual([
        CALLBACK_UNAVAILABLE,
        false,
        5_000,
      ]);
      expect(reports).toEqual([
        {
          merchantId: 'shop-a',
          report: expect.objectContaining({
            idempotencyKey: 'shop-a:k',
            outcome: 'retrying',
            httpStatus: 503,
            url: merchant.url,
          }),
        },
      ]);
      merchant.answerNext(503);
      const late = new MockActivityEnvironment({
        workflowExecution,
        scheduledTimestampMs: Date.now() - 61_000,
        attempt: 9,
      });
      const gaveUp = await failureOf(runActivity(late, windowed.notifyMerchant, input));
      expect([gaveUp.type, gaveUp.nonRetryable]).toEqual([CALLBACK_GIVEN_UP, true]);
      expect(gaveUp.details?.[0]).toEqual({ status: 503, attempt: 9 });
      expect(reports.at(-1)?.report).toMatchObject({ outcome: 'given-up', attempts: 9 });
      expect(givenUp).toEqual(['shop-a']);
      // Delivered at a later attempt: the ledger forgets it.
      const after = new MockActivityEnvironment({ workflowExecution, scheduledTimestampMs: Date.now(), attempt: 2 });
      await runActivity(after, windowed.notifyMerchant, input);
      expect(reports.at(-1)?.report).toMatchObject({ idempotencyKey: 'shop-a:k', outcome: 'delivered' });
    });

    it('signs each attempt at send time (Standard Webhooks): same webhook-id, this attempt’s timestamp', async () => {
      const key = 'finance-application:ref-1:APPROVED';
      merchant.answerNext(503);
      await failureOf(
        runActivity(env, activities.notifyMerchant, {
          merchantId: 'test',
          url: merchant.url,
          idempotencyKey: key,
          event,
        }),
      );
      const beforeSecond = Math.floor(Date.now() / 1000);
      await runActivity(env, activities.notifyMerchant, {
        merchantId: 'test',
        url: merchant.url,
        idempotencyKey: key,
        event,
      });
      expect(merchant.received).toHaveLength(2);
      for (const { headers, body } of merchant.received) {
        expect(headers['webhook-id']).toBe(key);
        expect(headers['webhook-timestamp']).toMatch(/^\d+$/);
        expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
        expect(new Webhook(signingSecret).verify(body, headers as Record<string, string>)).toEqual(payload);
      }
      expect(Number(merchant.received[1]!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(beforeSecond);
    });

    it('refuses a URL outside the allow-list, or with no signing secret, non-retryably and without a request', async () => {
      const strict = createActivities({
        bank: handle.client,
        webhooks,
        callbacks: {
          allowList: { origins: ['https://shop.example'], loopback: false },
          signingSecrets: [signingSecret],
        },
        callbackDispatcher: callbacks,
      });
      const outside = await failureOf(
        runActivity(env, strict.notifyMerchant, { merchantId: 'test', url: merchant.url, idempotencyKey: 'k', event }),
      );
      expect([outside.type, outside.nonRetryable]).toEqual([CALLBACK_NOT_ALLOWED, true]);
      expect(outside.message).toMatch(/callback origin http:\/\/127\.0\.0\.1:\d+ is not in CALLBACK_ALLOWED_ORIGINS/);
      expect(outside.message).not.toContain('merchant-path-secret');

      const unsigned = createActivities({
        bank: handle.client,
        webhooks,
        callbacks: { allowList: callbackDeps.allowList, signingSecrets: [] },
      });
      const noSecret = await failureOf(
        runActivity(env, unsigned.notifyMerchant, {
          merchantId: 'test',
          url: merchant.url,
          idempotencyKey: 'k',
          event,
        }),
      );
      expect([noSecret.type, noSecret.nonRetryable]).toEqual([CALLBACK_NOT_ALLOWED, true]);

      // Without callback configuration every URL is refused.
      const none = createActivities({ bank: handle.client, webhooks });
      expect(await runActivity(env, none.checkCallbackUrl, { merchantId: 'test', url: merchant.url })).toMatchObject({
        allowed: false,
      });
      expect(merchant.received).toHaveLength(0);
    });

    it("signs a merchant's callback with every generation of its derived secret still signing, read at each callback", async () => {
      const master = 'activities-test-master-of-the-callback-secrets';
      let generations = [{ generation: 1 }] as { generation: number; retiresAt?: string }[];
      const reads: string[] = [];
      const derived = createActivities({
        bank: handle.client,
        webhooks,
        callbacks: { allowList: callbackDeps.allowList, signingSecrets: [], signingMasters: [master] },
        callbackSecretGenerations: (merchantId) => {
          reads.push(merchantId);
          return Promise.resolve(generations);
        },
        callbackDispatcher: callbacks,
      });
      const send = (idempotencyKey: string) =>
        runActivity(env, derived.notifyMerchant, { merchantId: 'shop-a', url: merchant.url, idempotencyKey, event });
      const verifies = (generation: number, merchantId = 'shop-a') => {
        const { headers, body } = merchant.received.at(-1)!;
        try {
          new Webhook(deriveCallbackSigningSecret(master, merchantId, generation)).verify(
            body,
            headers as Record<string, string>,
          );
          return true;
        } catch {
          return false;
        }
      };
      await send('k1');
      expect([verifies(1), verifies(1, 'shop-b')]).toEqual([true, false]);
      // Rotated elsewhere (another API process): the next callback reads it and signs with both.
      generations = [{ generation: 2 }, { generation: 1, retiresAt: new Date(Date.now() + 60_000).toISOString() }];
      await send('k2');
      expect([verifies(2), verifies(1)]).toEqual([true, true]);
      // The grace period over: the new one only.
      generations = [{ generation: 2 }, { generation: 1, retiresAt: new Date(Date.now() - 1).toISOString() }];
      await send('k3');
      expect([verifies(2), verifies(1)]).toEqual([true, false]);
      expect(reads).toEqual(['shop-a', 'shop-a', 'shop-a']);

      // Temporal not answering: nothing sent, a retryable failure (never a callback with a generation missing).
      const failing = createActivities({
        bank: handle.client,
        webhooks,
        callbacks: { allowList: callbackDeps.allowList, signingSecrets: [], signingMasters: [master] },
        callbackSecretGenerations: () => Promise.reject(new Error('Temporal unavailable')),
        callbackDispatcher: callbacks,
      });
      const before = merchant.received.length;
      const failure = await failureOf(
        runActivity(env, failing.notifyMerchant, {
          merchantId: 'shop-a',
          url: merchant.url,
          idempotencyKey: 'k4',
          event,
        }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([CALLBACK_UNAVAILABLE, false]);
      expect(merchant.received).toHaveLength(before);
    });

    it('checkCallbackUrl gives the verdict without throwing, showing the origin only', async () => {
      expect(await runActivity(env, activities.checkCallbackUrl, { merchantId: 'test', url: merchant.url })).toEqual({
        allowed: true,
        origin: new URL(merchant.url).origin,
      });
      expect(
        await runActivity(env, activities.checkCallbackUrl, {
          merchantId: 'test',
          url: 'https://evil.example/hook?token=t',
        }),
      ).toEqual({
        allowed: false,
        origin: 'https://evil.example',
        reason: 'callback origin https://evil.example is not in CALLBACK_ALLOWED_ORIGINS',
        variable: 'CALLBACK_ALLOWED_ORIGINS',
      });
    });
  });

  describe('DNS rebinding guard (the callback dispatcher’s lookup)', () => {
    it('a listed host name that resolves to a loopback address is refused at connect time, non-retryably', async () => {
      const merchant = await startMerchant();
      // merchant.test:<port> is listed; it "resolves" to the local merchant's 127.0.0.1, as a rebinding would.
      const url = merchant.url.replace('127.0.0.1', 'merchant.test');
      const allowList = { origins: [new URL(url).origin], loopback: false };
      const resolve = ((_host: string, _options: unknown, callback: (e: null, a: LookupAddress[]) => void) =>
        callback(null, [{ address: '127.0.0.1', family: 4 }])) as never;
      const guarded = createCallbackDispatcher({ allowList, resolve });
      const open = createCallbackDispatcher({ allowList: { ...allowList, loopback: true }, resolve });
      try {
        const deps = { bank: handle.client, webhooks, callbacks: { allowList, signingSecrets: [signingSecret] } };
        const refused = await failureOf(
          runActivity(env, createActivities({ ...deps, callbackDispatcher: guarded }).notifyMerchant, {
            merchantId: 'test',
            url,
            idempotencyKey: 'k',
            event: {},
          }),
        );
        expect([refused.type, refused.nonRetryable]).toEqual([CALLBACK_NOT_ALLOWED, true]);
        expect(refused.message).toBe(
          'merchant callback refused: merchant.test resolves to a non-public address (127.0.0.1)',
        );
        expect(merchant.received).toHaveLength(0);
        // The same name through the embedded stack's list (loopback allowed): the lookup is the one connecting.
        const delivered = await runActivity(
          env,
          createActivities({ ...deps, callbackDispatcher: open }).notifyMerchant,
          { merchantId: 'test', url, idempotencyKey: 'k', event: {} },
        );
        expect(delivered).toEqual({ delivered: true, status: 200, attempt: 1 });
        expect(merchant.received[0]!.headers.host).toBe(new URL(url).host);
      } finally {
        await guarded.close();
        await open.close();
        await merchant.close();
      }
    });

    const resolvingTo =
      (...addresses: string[]) =>
      (_host: string, _options: unknown, callback: (err: Error | null, addresses: LookupAddress[]) => void) =>
        callback(
          null,
          addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
        );
    const lookup = (allowList: { origins: string[]; loopback: boolean }, hostname: string, ...addresses: string[]) =>
      new Promise<{ err: (Error & { code?: string }) | null; result: unknown }>((resolve) =>
        guardedLookup(allowList, resolvingTo(...addresses) as never)(hostname, { all: true }, (err, result) =>
          resolve({ err, result }),
        ),
      );
    const strict = { origins: ['https://hooks.shop.example'], loopback: false };

    it('passes public addresses through', async () => {
      const { err, result } = await lookup(strict, 'hooks.shop.example', '93.184.216.34', '2606:2800:220:1::1');
      expect(err).toBeNull();
      expect(result).toEqual([
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ]);
    });

    it.each([
      ['10.0.0.7'],
      ['127.0.0.1'],
      ['169.254.169.254'],
      ['192.168.1.1'],
      ['::1'],
      ['fd00::1'],
      ['::ffff:10.0.0.7'],
    ])('refuses a listed host name resolving to %s', async (address) => {
      const { err } = await lookup(strict, 'hooks.shop.example', '93.184.216.34', address);
      expect(err?.code).toBe('ERR_CALLBACK_NON_PUBLIC_ADDRESS');
      expect(err?.message).toContain(address);
    });

    it('allows loopback only where the allow-list does (embedded) or the name is localhost', async () => {
      expect((await lookup({ origins: [], loopback: true }, 'dev.shop.example', '127.0.0.1')).err).toBeNull();
      expect((await lookup(strict, 'localhost', '127.0.0.1', '::1')).err).toBeNull();
      expect((await lookup({ origins: [], loopback: true }, 'dev.shop.example', '10.1.2.3')).err).not.toBeNull();
    });
  });

  it('logs carry the workflow id and the bank ids, never the token, the secret or the callback URL path', async () => {
    const created = await runActivity(env, activities.createApplication, {
      merchantId: 'test',
      merchantReference: 'ref-1',
      application: { redirectUrl: 'https://shop.example/back' },
    });
    bank.revokeAllTokens(); // forces the 401 → fresh token path through the logs too
    await runActivity(env, activities.getApplicationStatus, {
      financeApplicationId: created.financeApplicationId,
      merchantReference: 'ref-1',
    });
    const { taskId } = await runActivity(env, activities.startRefresh, { consentId: 'consent-7' });
    bank.override('getApplicationStatus', reply(400, { error: 'bad', message: 'rejected' }));
    await env
      .run(activities.getApplicationStatus, { financeApplicationId: 'fa-x', merchantReference: 'ref-1' })
      .catch(() => undefined);
    const merchant = await startMerchant();
    try {
      await runActivity(env, activities.notifyMerchant, {
        merchantId: 'test',
        url: merchant.url,
        idempotencyKey: 'k',
        event: {},
      });
    } finally {
      await merchant.close();
    }

    const text = logs.text();
    expect(bank.issuedTokens()).toHaveLength(2);
    for (const token of bank.issuedTokens()) expect(text).not.toContain(token);
    expect(text).not.toContain(clientSecret);
    expect(text).not.toContain('merchant-path-secret');
    expect(text).not.toContain(signingSecret);
    expect(text).not.toContain(signingSecret.slice('whsec_'.length));
    expect(text).toContain('"workflowId":"finance-application:ref-1"');
    expect(text).toContain(`"financeApplicationId":"${created.financeApplicationId}"`);
    expect(text).toContain('"consentId":"consent-7"');
    expect(text).toContain(`"taskId":"${taskId}"`);
    expect(text).toContain('"failureType":"BankRejected"');
  });
});
