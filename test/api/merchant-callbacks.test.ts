/**
 * Signed merchant callbacks and the callback allow-list on the whole stack: real dev server, the bank sandbox over
 * HTTP, real activities and worker, the real Express app, and a merchant endpoint that verifies as a merchant
 * would, with the `standardwebhooks` library.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import pino from 'pino';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { createInternalApp } from '../../src/api/app';
import { closeServer, listen, boundPort } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import {
  awaitFinanceApplication,
  FinanceApplicationFailureType,
  startFinanceApplication,
} from '../../src/client/finance-applications';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { startMerchant } from '../activities/helpers/merchant-server';
import { recordFinanceHistory } from '../helpers/histories';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { claimTestConsent, TEST_MERCHANT, testMerchants } from '../helpers/merchants';

const secret = (label: string) => `whsec_${Buffer.from(label.padEnd(32, '.')).toString('base64')}`;
/** A rotation in progress: the new secret first, the old one still listed. */
const NEW_SECRET = secret('rotation: the new callback key');
const OLD_SECRET = secret('rotation: the old callback key');

/** With RECORD_HISTORIES=1, saves a run's history for the replay test (test/helpers/histories.ts). */
async function recordHistory(client: Client, ref: string, name: string): Promise<void> {
  if (process.env.RECORD_HISTORIES !== '1') return;
  recordFinanceHistory(
    await client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref)).fetchHistory(),
    name,
  );
}

type Received = { headers: IncomingHttpHeaders; body: string };
const verifyWith = (key: string, { headers, body }: Received) =>
  new Webhook(key).verify(body, headers as Record<string, string>);

describe('merchant callbacks: signed (Standard Webhooks) and only to allowed origins (whole stack)', () => {
  let merchant: Awaited<ReturnType<typeof startMerchant>>;
  let merchantOrigin: string;
  let stack: TestStack;
  beforeAll(async () => {
    merchant = await startMerchant();
    merchantOrigin = new URL(merchant.url).origin;
    stack = await startTestStack({
      // Listed explicitly (no embedded loopback default): the merchant's exact origin, and one public shop.
      callbacks: { allowedOrigins: `${merchantOrigin},https://shop.example`, signingSecrets: [NEW_SECRET, OLD_SECRET] },
      transactionsCallbackUrl: `${merchantOrigin}/transactions`,
    });
  });
  afterAll(async () => {
    await stack?.close();
    await merchant?.close();
  });

  const post = (body: unknown, apiUrl = stack.internalUrl) =>
    fetch(`${apiUrl}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.apiKey}` },
      body: JSON.stringify(body),
    });
  /** The sandbox's own log of API calls, read over its control API. */
  const bankCreateCalls = async () => {
    const calls = (await (await fetch(`${stack.sandbox.url}/_sandbox/api-calls`)).json()) as { route: string }[];
    return calls.filter((c) => c.route === 'createApplication').length;
  };
  /** Callbacks whose payload (Standard Webhooks `{ type, timestamp, data }`) matches. */
  const receivedFor = (predicate: (type: unknown, data: Record<string, unknown>) => boolean) =>
    merchant.received.filter((r) => {
      const payload = JSON.parse(r.body) as { type?: unknown; data?: Record<string, unknown> };
      return predicate(payload.type, payload.data ?? {});
    });

  it('each status change arrives signed: a merchant holding the new or the old secret verifies it; a tampered body, a replay after the tolerance or another secret fails', async () => {
    const ref = `signed-${randomUUID()}`;
    const res = await post({
      merchantReference: ref,
      redirectUrl: 'https://shop.example/done',
      callbackUrl: merchant.url,
    });
    expect(res.status).toBe(201);
    const final = await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    expect(final).toMatchObject({ done: true, status: 'COMPLETED' });

    const callbacks = receivedFor((_type, data) => data.merchantReference === ref);
    expect(callbacks.length).toBe(final.notificationsSent);
    expect(callbacks.length).toBeGreaterThanOrEqual(2); // at least CREATED and COMPLETED
    for (const callback of callbacks) {
      const event = JSON.parse(callback.body) as { data: { status: string } };
      const { headers } = callback;
      // webhook-id is the idempotency key: stable per event, across retries.
      expect(headers['webhook-id']).toBe(`${financeApplicationWorkflowId(TEST_MERCHANT, ref)}:${event.data.status}`);
      expect(headers['idempotency-key']).toBe(headers['webhook-id']);
      expect(headers['webhook-timestamp']).toMatch(/^\d{10}$/);
      expect(String(headers['webhook-signature']).split(' ')).toHaveLength(2); // one per configured secret
      // Rotation: the merchant that still holds the old secret and the one already on the new both verify.
      expect(verifyWith(NEW_SECRET, callback)).toEqual(event);
      expect(verifyWith(OLD_SECRET, callback)).toEqual(event);
      expect(() => verifyWith(secret('someone else'), callback)).toThrow(WebhookVerificationError);
    }

    const [first] = callbacks;
    const tampered = { ...first!, body: first!.body.replace(/"status":"[A-Z_]+"/, '"status":"COMPLETED_BY_ATTACKER"') };
    expect(tampered.body).not.toBe(first!.body);
    expect(() => verifyWith(NEW_SECRET, tampered)).toThrow('No matching signature found');
    // A captured callback replayed later than the library's tolerance (5 minutes) is refused…
    const sentAt = Number(first!.headers['webhook-timestamp']) * 1000;
    const later = jest.spyOn(Date, 'now').mockReturnValue(sentAt + 6 * 60_000);
    try {
      expect(() => verifyWith(NEW_SECRET, first!)).toThrow('Message timestamp too old');
    } finally {
      later.mockRestore();
    }
    // …and refreshing its timestamp breaks the signature, which covers it.
    const refreshed = {
      ...first!,
      headers: { ...first!.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) + 1) },
    };
    expect(() => verifyWith(NEW_SECRET, refreshed)).toThrow('No matching signature found');

    await recordHistory(stack.t.client, ref, 'signed-callbacks');
  });

  it('a transactions batch (TRANSACTIONS_CALLBACK_URL) is signed the same way', async () => {
    const consentId = `signed-tx-${randomUUID()}`;
    await claimTestConsent(stack.t, consentId); // the merchant's consent: its transactionEvents reach it
    await stack.sandbox.control.emitTransactionEvents(consentId, { count: 1, accountIds: ['OPB-1'] });
    const [batch] = await eventually(() => {
      const got = receivedFor((type, data) => type === 'consent.transactions-changed' && data.consentId === consentId);
      return got.length > 0 ? got : undefined;
    });
    expect(batch!.headers['webhook-id']).toBe(batch!.headers['idempotency-key']);
    expect(verifyWith(OLD_SECRET, batch!)).toMatchObject({ data: { consentId, accounts: [{ accountId: 'OPB-1' }] } });
    expect(verifyWith(NEW_SECRET, batch!)).toMatchObject({ data: { consentId } });
  });

  it.each([
    ['another origin', () => 'https://evil.example/hooks?token=t', 'https://evil.example'],
    ['the merchant host on another port', () => otherPort(merchantOrigin), undefined],
    ['another name for the same host', () => merchant.url.replace('127.0.0.1', 'localhost'), undefined],
  ])(
    'a callbackUrl outside the allow-list (%s) is refused with 400 naming the origin and the variable; the bank saw nothing',
    async (_case, url, origin) => {
      const callbackUrl = url();
      const expectedOrigin = origin ?? new URL(callbackUrl).origin;
      const ref = `refused-${randomUUID()}`;
      const before = await bankCreateCalls();
      const res = await post({ merchantReference: ref, redirectUrl: 'https://shop.example/done', callbackUrl });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        type: 'https://paylater.example/problems/callback-url-refused',
        error: 'bad_request',
        message: `callbackUrl refused: callback origin ${expectedOrigin} is not in CALLBACK_ALLOWED_ORIGINS`,
        details: { field: 'callbackUrl', origin: expectedOrigin, variable: 'CALLBACK_ALLOWED_ORIGINS' },
      });
      expect(await bankCreateCalls()).toBe(before);
      await expect(
        stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref)).describe(),
      ).rejects.toThrow(/not found/i);
    },
  );

  it('a callbackUrl with credentials is refused with 400, the credentials never echoed', async () => {
    const res = await post({
      merchantReference: `creds-${randomUUID()}`,
      redirectUrl: 'https://shop.example/done',
      callbackUrl: merchant.url.replace('http://', 'http://user:hunter2@'),
    });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toContain('must not carry credentials');
    expect(text).not.toContain('hunter2');
  });

  it('a workflow started directly (typed client) with a refused URL fails before the bank is called; a facade with a looser list answers 400 from the worker’s verdict', async () => {
    const before = await bankCreateCalls();
    const ref = `direct-${randomUUID()}`;
    const err: unknown = await startFinanceApplication(
      stack.t.client,
      TEST_MERCHANT,
      {
        merchantReference: ref,
        application: { redirectUrl: 'https://shop.example/done' },
        callbackUrl: 'https://evil.example/steal',
      },
      { taskQueue: stack.t.taskQueue },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    const cause = (err as WorkflowUpdateFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({
      type: FinanceApplicationFailureType.CallbackUrlNotAllowed,
      nonRetryable: true,
      message:
        'The finance application was not created: callback origin https://evil.example is not in CALLBACK_ALLOWED_ORIGINS',
    });

    const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref));
    expect((await handle.describe()).status.name).toBe('FAILED');
    const { events } = await handle.fetchHistory();
    const EventType = temporal.api.enums.v1.EventType;
    const types = events!.map((e) => e.eventType);
    expect(types).not.toContain(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED); // createApplication never scheduled
    expect(types).toContain(EventType.EVENT_TYPE_MARKER_RECORDED); // the patch and the local activity's verdict
    expect(await bankCreateCalls()).toBe(before);
    await recordHistory(stack.t.client, ref, 'callback-refused');

    // An API process configured more loosely than the worker (a deploy mid-way, say): the worker decides.
    const loose = createInternalApp({
      ...stack.appDeps,
      merchants: testMerchants([{ name: TEST_MERCHANT }], {
        allowList: { origins: ['https://evil.example'], loopback: false },
        signingSecrets: [NEW_SECRET, OLD_SECRET],
      }),
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(),
    });
    const server = await listen(loose, 0, '127.0.0.1');
    try {
      const res = await post(
        {
          merchantReference: `loose-${randomUUID()}`,
          redirectUrl: 'https://shop.example/done',
          callbackUrl: 'https://evil.example/steal',
        },
        `http://127.0.0.1:${boundPort(server)}`,
      );
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        error: 'bad_request',
        message: 'callbackUrl refused: callback origin https://evil.example is not in CALLBACK_ALLOWED_ORIGINS',
        details: { field: 'callbackUrl', origin: 'https://evil.example', variable: 'CALLBACK_ALLOWED_ORIGINS' },
      });
    } finally {
      await closeServer(server, 1_000);
    }
    expect(await bankCreateCalls()).toBe(before);
  });
});

/** The same host on a port nobody listed. */
function otherPort(origin: string): string {
  const url = new URL(origin);
  url.port = String(Number(url.port) === 65535 ? 65534 : Number(url.port) + 1);
  return `${url.origin}/hook`;
}
