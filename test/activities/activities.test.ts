import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Agent } from 'undici';
import {
  createActivities,
  createBankClient,
  createCallbackDispatcher,
  type BankClientHandle,
} from '../../src/activities';
import type { Activities } from '../../src/activities/types';
import { financeApplicationWebhookUrl, isValidWebhookHash } from '../../src/security/webhook-hash';
import { BankFailureType, CALLBACK_REJECTED } from '../../src/shared/failure-types';
import { closedPortUrl, hang, reply, startFakeBank, type FakeBank } from './helpers/fake-bank';
import { captureLogs } from './helpers/log-capture';
import { failureOf, runActivity } from './helpers/run-activity';
import { startMerchant } from './helpers/merchant-server';

const clientId = 'merchant-app';
const clientSecret = 'activities-client-secret-91c2';
const webhooks = { publicBaseUrl: 'https://paylater.example.com/', hashSecret: 'hash-secret-for-tests' };

describe('activities (MockActivityEnvironment, real client, real HTTP)', () => {
  let bank: FakeBank;
  let handle: BankClientHandle;
  let callbacks: Agent;
  let activities: Activities;
  let env: MockActivityEnvironment;
  let logs: ReturnType<typeof captureLogs>;

  beforeEach(async () => {
    logs = captureLogs();
    bank = await startFakeBank({ clientId, clientSecret });
    handle = createBankClient({
      authUrl: bank.url,
      baseUrl: bank.url,
      clientId,
      clientSecret,
      callTimeoutMs: 500,
      logger: logs.logger,
    });
    callbacks = createCallbackDispatcher({ timeoutMs: 500 });
    activities = createActivities({
      bank: handle.client,
      webhooks,
      callbackDispatcher: callbacks,
      callbackTimeoutMs: 500,
    });
    env = new MockActivityEnvironment(
      { workflowExecution: { workflowId: 'finance-application:ref-1', runId: '0d4c5a1e-0000-4000-8000-000000000001' } },
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
      const expectedUrl = financeApplicationWebhookUrl(webhooks.publicBaseUrl, webhooks.hashSecret, 'ref-1');
      expect(sent).toEqual({ redirectUrl: 'https://shop.example/back', amount: 250, webhookUrl: expectedUrl });
      expect(expectedUrl.startsWith('https://paylater.example.com/webhooks/finance-applications/ref-1/')).toBe(true);
      expect(isValidWebhookHash(webhooks.hashSecret, 'ref-1', expectedUrl.split('/').at(-1)!)).toBe(true);
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
      bank.override('getApplicationStatus', reply(404, { error: 'not_found', message: 'no such application' }));
      const failure = await failureOf(runActivity(env, activities.getApplicationStatus, status));
      expect(failure.type).toBe(BankFailureType.Rejected);
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
    const event = { type: 'statusChanged', status: 'APPROVED' };

    it('POSTs the event as JSON with the Idempotency-Key header', async () => {
      await expect(
        runActivity(env, activities.notifyMerchant, { url: merchant.url, idempotencyKey: 'ref-1:APPROVED', event }),
      ).resolves.toEqual({
        delivered: true,
        status: 200,
      });
      const [got] = merchant.received;
      expect(got!.headers['idempotency-key']).toBe('ref-1:APPROVED');
      expect(got!.headers['content-type']).toBe('application/json');
      expect(JSON.parse(got!.body)).toEqual(event);
    });

    it('4xx → MerchantCallbackRejected, non-retryable', async () => {
      merchant.answerNext(410);
      const failure = await failureOf(
        runActivity(env, activities.notifyMerchant, { url: merchant.url, idempotencyKey: 'k', event }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([CALLBACK_REJECTED, true]);
    });

    it('5xx and connection refused → retryable', async () => {
      merchant.answerNext(500);
      const failure = await failureOf(
        runActivity(env, activities.notifyMerchant, { url: merchant.url, idempotencyKey: 'k', event }),
      );
      expect(failure.nonRetryable).toBe(false);
      const refused = await failureOf(
        runActivity(env, activities.notifyMerchant, {
          url: `${await closedPortUrl()}/hook`,
          idempotencyKey: 'k',
          event,
        }),
      );
      expect(refused.nonRetryable).toBe(false);
    });
  });

  it('logs carry the workflow id and the bank ids, never the token, the secret or the callback URL path', async () => {
    const created = await runActivity(env, activities.createApplication, {
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
      await runActivity(env, activities.notifyMerchant, { url: merchant.url, idempotencyKey: 'k', event: {} });
    } finally {
      await merchant.close();
    }

    const text = logs.text();
    expect(bank.issuedTokens()).toHaveLength(2);
    for (const token of bank.issuedTokens()) expect(text).not.toContain(token);
    expect(text).not.toContain(clientSecret);
    expect(text).not.toContain('merchant-path-secret');
    expect(text).toContain('"workflowId":"finance-application:ref-1"');
    expect(text).toContain(`"financeApplicationId":"${created.financeApplicationId}"`);
    expect(text).toContain('"consentId":"consent-7"');
    expect(text).toContain(`"taskId":"${taskId}"`);
    expect(text).toContain('"failureType":"BankRejected"');
  });
});
