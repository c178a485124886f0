import { MockActivityEnvironment } from '@temporalio/testing';
import { Pool } from 'undici';
import { createActivities, createBankClient, type BankClientHandle } from '../../src/activities';
import { BankClient } from '../../src/activities/bank/bank-client';
import type { TokenProvider } from '../../src/activities/bank/token-provider';
import type { Activities } from '../../src/activities/types';
import { startSandbox, type RunningSandbox } from '../../src/sandbox';
import { BankFailureType } from '../../src/shared/failure-types';
import { closedPortUrl } from './helpers/fake-bank';
import { captureLogs } from './helpers/log-capture';
import { failureOf, runActivity } from './helpers/run-activity';

/** The must-show behaviours of the bank client and activities, against the bank sandbox over real HTTP. */

const clientId = 'sandbox-client';
const clientSecret = 'sandbox-secret-5b9e1d';
const webhooks = { publicBaseUrl: 'http://127.0.0.1:9/', hashSecret: 'hash-secret' };

describe('bank client and activities against the sandbox', () => {
  let now: number;
  let sandbox: RunningSandbox;
  let handle: BankClientHandle;
  let activities: Activities;
  let env: MockActivityEnvironment;
  let logs: ReturnType<typeof captureLogs>;
  const seenTokens = new Set<string>();

  /** One clock for the sandbox and the client, so a token expires without the test waiting. */
  const start = async (tokenTtlSeconds = 3600, callTimeoutMs = 1_000): Promise<void> => {
    now = Date.parse('2030-03-01T10:00:00Z');
    logs = captureLogs();
    sandbox = await startSandbox({
      clientId,
      clientSecret,
      tokenTtlSeconds,
      clock: () => now,
      lifecycle: { stepMs: 60_000 },
    });
    handle = createBankClient({
      authUrl: sandbox.url,
      baseUrl: sandbox.url,
      clientId,
      clientSecret,
      callTimeoutMs,
      now: () => now,
      logger: logs.logger,
    });
    activities = createActivities({ bank: handle.client, webhooks });
    env = new MockActivityEnvironment(
      { workflowExecution: { workflowId: 'finance-application:sbx-1', runId: '0d4c5a1e-0000-4000-8000-000000000002' } },
      { logger: logs.logger },
    );
  };
  /** Remembers the token currently cached (for the never-logged assertion). */
  const noteToken = async (): Promise<void> => {
    seenTokens.add(await handle.tokens.getToken());
  };
  const unauthorizedCalls = (): number => sandbox.control.apiCalls().filter((c) => c.status === 401).length;
  const createOne = (ref = 'sbx-1') =>
    runActivity(env, activities.createApplication, {
      merchantId: 'test',
      merchantReference: ref,
      application: { redirectUrl: 'https://shop.example/back' },
    });

  afterEach(async () => {
    await handle.close();
    await sandbox.close();
  });

  it('200 concurrent calls with a cold cache make exactly one token request', async () => {
    // 200 reads at once on a loaded machine: a generous deadline (the point is the one token request).
    await start(3600, 15_000);
    const { financeApplicationId } = await handle.client.createApplication({
      redirectUrl: 'https://shop.example/back',
    });
    const reads = await Promise.all(
      Array.from({ length: 200 }, () =>
        runActivity(env, activities.getApplicationStatus, { financeApplicationId, merchantReference: 'sbx-1' }),
      ),
    );
    expect(reads.every((r) => r.status === 'CREATED')).toBe(true);
    expect(sandbox.control.tokenRequestCount()).toBe(1);
    expect(unauthorizedCalls()).toBe(0);
  });

  it('an expired token is renewed before use', async () => {
    await start(60);
    const { financeApplicationId } = await createOne();
    now += 61_000; // past expires_in on both sides
    await runActivity(env, activities.getApplicationStatus, { financeApplicationId, merchantReference: 'sbx-1' });
    expect(sandbox.control.tokenRequestCount()).toBe(2);
    expect(unauthorizedCalls()).toBe(0); // the expired token never reached the bank
  });

  it('a token revoked by the bank is replaced after one 401 and the call succeeds', async () => {
    await start();
    const { financeApplicationId } = await createOne();
    sandbox.control.revokeAllTokens();
    await expect(
      runActivity(env, activities.getApplicationStatus, { financeApplicationId, merchantReference: 'sbx-1' }),
    ).resolves.toMatchObject({ financeApplicationId, status: 'CREATED' });
    expect(unauthorizedCalls()).toBe(1);
    expect(sandbox.control.tokenRequestCount()).toBe(2);
  });

  it('createApplication sends the hashed webhookUrl and the merchant fields to the bank', async () => {
    await start();
    const created = await runActivity(env, activities.createApplication, {
      merchantId: 'test',
      merchantReference: 'sbx-7',
      application: { redirectUrl: 'https://shop.example/back', amount: 120, currency: 'EUR' },
    });
    const record = sandbox.control.application(created.financeApplicationId)!;
    expect(record.createRequest).toMatchObject({
      amount: 120,
      currency: 'EUR',
      redirectUrl: 'https://shop.example/back',
    });
    expect(record.createRequest.webhookUrl).toMatch(
      /^http:\/\/127\.0\.0\.1:9\/webhooks\/finance-applications\/test~sbx-7\/[\w-]+$/,
    );
    expect(created).toHaveProperty('createdAt'); // unknown fields of the bank's answer are kept
  });

  describe('each error class maps to its ApplicationFailure', () => {
    it('4xx → BankRejected, non-retryable, with the status', async () => {
      await start();
      // No redirectUrl: the bank refuses the create request.
      const failure = await failureOf(
        runActivity(env, activities.createApplication, {
          merchantId: 'test',
          merchantReference: 'sbx-1',
          application: {} as never,
        }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Rejected, true]);
      expect(failure.details?.[0]).toMatchObject({ status: 400 });
    });

    it('404 on the status read → BankApplicationUnknown, non-retryable (the workflow reports the anomaly)', async () => {
      await start();
      const failure = await failureOf(
        runActivity(env, activities.getApplicationStatus, {
          financeApplicationId: 'no-such-app',
          merchantReference: 'sbx-1',
        }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.ApplicationUnknown, true]);
      expect(failure.details?.[0]).toMatchObject({ status: 404, bankError: 'not_found' });
    });

    it('401 twice → BankUnauthorized, non-retryable (a token the bank never accepts)', async () => {
      await start();
      const invalidated: string[] = [];
      const neverValid: TokenProvider = {
        getToken: () => Promise.resolve('not-a-token-the-bank-issued'),
        invalidate: (token) => void invalidated.push(token),
      };
      const pool = new Pool(sandbox.url);
      try {
        const acts = createActivities({
          bank: new BankClient({ baseUrl: sandbox.url, dispatcher: pool, tokens: neverValid }),
          webhooks,
        });
        const failure = await failureOf(runActivity(env, acts.startRefresh, { consentId: 'consent-1' }));
        expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unauthorized, true]);
        expect(unauthorizedCalls()).toBe(2); // the call and exactly one retry
        expect(invalidated).toHaveLength(2);
      } finally {
        await pool.close();
      }
    });

    it('wrong client credentials → BankUnauthorized, non-retryable', async () => {
      await start();
      const wrong = createBankClient({
        authUrl: sandbox.url,
        baseUrl: sandbox.url,
        clientId,
        clientSecret: 'not-the-secret',
      });
      try {
        const acts = createActivities({ bank: wrong.client, webhooks });
        const failure = await failureOf(runActivity(env, acts.startRefresh, { consentId: 'consent-1' }));
        expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
          BankFailureType.Unauthorized,
          true,
          expect.objectContaining({ operation: 'token', status: 401 }),
        ]);
      } finally {
        await wrong.close();
      }
    });

    it('429 → BankRateLimited, retryable, nextRetryDelay from Retry-After', async () => {
      await start();
      sandbox.control.injectApiFault({ route: 'refresh', kind: '429', retryAfterSeconds: 4 });
      const failure = await failureOf(runActivity(env, activities.startRefresh, { consentId: 'consent-1' }));
      expect([failure.type, failure.nonRetryable, failure.nextRetryDelay]).toEqual([
        BankFailureType.RateLimited,
        false,
        4000,
      ]);
    });

    it('5xx → BankUnavailable, retryable', async () => {
      await start();
      sandbox.control.injectApiFault({ route: 'createApplication', kind: '5xx', status: 503 });
      const failure = await failureOf(createOne());
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
      expect(failure.details?.[0]).toMatchObject({ status: 503 });
      expect(sandbox.control.applications()).toHaveLength(0);
    });

    it('a token endpoint answering 5xx → BankUnavailable, and the next call gets a token', async () => {
      await start();
      sandbox.control.injectApiFault({ route: 'token', kind: '5xx', status: 502 });
      const failure = await failureOf(runActivity(env, activities.startRefresh, { consentId: 'consent-1' }));
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
      await expect(runActivity(env, activities.startRefresh, { consentId: 'consent-1' })).resolves.toEqual({
        taskId: expect.any(String),
      });
      expect(sandbox.control.tokenRequestCount()).toBe(2);
    });

    it('a bank that hangs → BankUnavailable (timeout), retryable', async () => {
      await start();
      sandbox.control.injectApiFault({ route: 'getStatus', kind: 'hang' });
      const failure = await failureOf(
        runActivity(env, activities.getApplicationStatus, { financeApplicationId: 'fa', merchantReference: 'sbx-1' }),
      );
      expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
      expect(failure.details?.[0]).toMatchObject({ code: 'TIMEOUT' });
    });

    it('connection refused → BankUnavailable, retryable', async () => {
      await start();
      const down = await closedPortUrl();
      const unreachable = createBankClient({ authUrl: down, baseUrl: down, clientId, clientSecret });
      try {
        const failure = await failureOf(
          runActivity(env, createActivities({ bank: unreachable.client, webhooks }).startRefresh, { consentId: 'c' }),
        );
        expect([failure.type, failure.nonRetryable]).toEqual([BankFailureType.Unavailable, false]);
        expect(failure.details?.[0]).toMatchObject({ code: 'ECONNREFUSED' });
      } finally {
        await unreachable.close();
      }
    });
    // An invalid 2xx body (BankInvalidResponse) cannot be produced by the sandbox: see activities.test.ts.
  });

  it('neither the token nor the secret ever appears in the logs', async () => {
    await start(60);
    const { financeApplicationId } = await createOne();
    await noteToken();
    sandbox.control.revokeAllTokens(); // 401 → fresh token
    await runActivity(env, activities.getApplicationStatus, { financeApplicationId, merchantReference: 'sbx-1' });
    await noteToken();
    now += 61_000; // expiry → renewal
    const { taskId } = await runActivity(env, activities.startRefresh, { consentId: 'consent-9' });
    await noteToken();
    sandbox.control.injectApiFault({ route: 'getStatus', kind: '5xx' });
    await env
      .run(activities.getApplicationStatus, { financeApplicationId, merchantReference: 'sbx-1' })
      .catch(() => undefined);
    const wrong = createBankClient({
      authUrl: sandbox.url,
      baseUrl: sandbox.url,
      clientId,
      clientSecret: 'x',
      logger: logs.logger,
    });
    await env
      .run(createActivities({ bank: wrong.client, webhooks }).startRefresh, { consentId: 'c' })
      .catch(() => undefined);
    await wrong.close();

    const text = logs.text();
    expect(seenTokens.size).toBe(3);
    for (const token of seenTokens) expect(text).not.toContain(token);
    expect(text).not.toContain(clientSecret);
    // The logs are not empty: they carry the workflow id and the bank's ids.
    expect(text).toContain('"workflowId":"finance-application:sbx-1"');
    expect(text).toContain(`"financeApplicationId":"${financeApplicationId}"`);
    expect(text).toContain(`"taskId":"${taskId}"`);
    expect(text).toContain('"failureType":"BankUnauthorized"');
  });
});
