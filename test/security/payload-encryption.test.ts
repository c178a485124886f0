/**
 * Customer data encrypted in Temporal, on the whole stack (real dev server, sandbox over HTTP, real worker and
 * app, all with the encrypting data converter): a marker in an application's fields is absent from the raw
 * history as the Temporal CLI reads it without a codec, and present when read through the internal listener's codec
 * endpoint with an operator key (the CLI's --codec-endpoint/--codec-auth, and POST /codec/decode); a merchant key
 * there is refused with 401, as a key that is no one's, and decodes nothing; a history written under an old key still decodes once a new key was
 * put first.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import express from 'express';
import pino from 'pino';
import { authenticateOperator } from '../../src/api/app';
import { errorHandler } from '../../src/api/problem-details';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { codecRoutes } from '../../src/api/resources/codec/routes';
import { getFinanceApplication } from '../../src/client/finance-applications';
import { createPayloadCodec, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import type { FinanceApplicationInput } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { findTemporalCli, MISSING_BINARY_HELP } from '../../src/temporal/binaries';
import { createDataConverter } from '../../src/temporal/data-converter';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually, TEST_PAYLOAD_ENCRYPTION_KEYS } from '../helpers/temporal';

const run = promisify(execFile);
const OPERATOR_KEY = `operator-${randomUUID()}`;
const MERCHANT_KEY = `merchant-${randomUUID()}`;
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** True when `text` occurs in any string of `json`, as it is or inside a base64 value (payload data). */
function containsAnywhere(json: unknown, text: string): boolean {
  if (typeof json === 'string') {
    if (json.includes(text)) return true;
    return /^[A-Za-z0-9+/]+={0,2}$/.test(json) && Buffer.from(json, 'base64').toString('latin1').includes(text);
  }
  if (Array.isArray(json)) return json.some((v) => containsAnywhere(v, text));
  if (json && typeof json === 'object') return Object.values(json).some((v) => containsAnywhere(v, text));
  return false;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}
interface HistoryJson {
  events: {
    eventType: string;
    workflowExecutionStartedEventAttributes?: {
      input?: { payloads?: JsonPayload[] };
      searchAttributes?: { indexedFields?: Record<string, JsonPayload> };
    };
  }[];
}

describe('customer data encrypted in Temporal (whole stack, Temporal CLI, codec endpoint)', () => {
  const cli = findTemporalCli();
  let stack: TestStack;
  /** The internal listener's codec endpoint, behind the operator keys (authenticateOperator). */
  let codecUrl: string;
  /** The CLI reads no profile or variable of this machine: a throwaway HOME, connection flags only. */
  let cliHome: string;

  beforeAll(async () => {
    if (!cli) throw new Error(`No Temporal CLI. ${MISSING_BINARY_HELP}`);
    cliHome = mkdtempSync(join(tmpdir(), 'paylater-cli-'));
    // The suite's ring: test-2 encrypts, test-1 decrypts.
    stack = await startTestStack({
      merchantApiKeys: [{ name: 'shop', key: MERCHANT_KEY }],
      operatorApiKeys: [{ name: 'ops', key: OPERATOR_KEY }],
    });
    codecUrl = `${stack.internalUrl}/codec`;
  });
  // Every answer of both listeners, the codec's 401s and 403s included, as the OpenAPI document describes it.
  afterEach(() => stack.openApi.expectAllMatched());
  afterAll(async () => {
    await stack?.close();
    rmSync(cliHome, { recursive: true, force: true });
  });

  /** `temporal workflow show --output json`, asynchronously: the codec endpoint it may call runs in this process. */
  async function show(workflowId: string, codec?: { endpoint: string; auth: string }): Promise<HistoryJson> {
    const args = ['workflow', 'show', '--address', stack.t.address, '--namespace', stack.t.namespace];
    args.push('--disable-config-file', '--disable-config-env', '--command-timeout', '15s');
    args.push('-w', workflowId, '--output', 'json');
    if (codec) args.push('--codec-endpoint', codec.endpoint, '--codec-auth', codec.auth);
    const { stdout } = await run(cli!, args, { env: { PATH: process.env.PATH ?? '', HOME: cliHome } });
    return JSON.parse(stdout) as HistoryJson;
  }

  const decodeOver = async (
    url: string,
    payloads: JsonPayload[],
    authorization: string | null = `Bearer ${OPERATOR_KEY}`,
  ) => {
    const res = await fetch(`${url}/decode`, {
      method: 'POST',
      headers: {
        ...(authorization === null ? {} : { authorization }),
        'content-type': 'application/json',
        'x-namespace': 'default',
      },
      body: JSON.stringify({ payloads }),
    });
    return { status: res.status, body: (await res.json()) as { payloads: JsonPayload[]; message?: string } };
  };

  const startedInput = (history: HistoryJson): JsonPayload[] => {
    const started = history.events.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED');
    const payloads = started?.workflowExecutionStartedEventAttributes?.input?.payloads;
    if (!payloads?.length) throw new Error('no workflow input in the history');
    return payloads;
  };

  it('keeps an application’s fields out of the raw history; the codec endpoint gives them back', async () => {
    const marker = `Customer-Marker-${randomUUID()}`;
    const merchantReference = `enc-${randomUUID()}`;
    const res = await stack.facade(`/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference,
        redirectUrl: 'https://shop.example/return',
        customer: { name: marker, email: `${marker}@example.com` },
      }),
    });
    expect(res.status).toBe(201);
    const { workflowId } = (await res.json()) as { workflowId: string };
    // The 201 came once the bank created it: the history holds the input, the create activity's input and result,
    // and the update's result. The merchant's client still reads the state (a query, decrypted on the way back).
    await eventually(async () => (await getFinanceApplication(stack.t.client, 'shop', merchantReference)).status);

    const raw = await show(workflowId);
    expect(raw.events.length).toBeGreaterThan(3);
    expect(containsAnywhere(raw, marker)).toBe(false);
    const input = startedInput(raw);
    expect(input[0]!.metadata).toEqual({ encoding: b64('binary/encrypted'), 'encryption-key-id': b64('test-2') });
    // Search attributes are not payload data (codecs do not touch them): the reference stays readable.
    const started = raw.events.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED');
    const reference =
      started?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields?.MerchantReference;
    expect(reference?.metadata?.encoding).toBe(b64('json/plain'));
    expect(Buffer.from(reference?.data ?? '', 'base64').toString('utf8')).toBe(JSON.stringify(merchantReference));

    // The CLI through the codec endpoint, as an operator runs it.
    const decoded = await show(workflowId, { endpoint: codecUrl, auth: `Bearer ${OPERATOR_KEY}` });
    expect(containsAnywhere(decoded, marker)).toBe(true);
    expect(startedInput(decoded)[0]!.metadata?.encoding).toBe(b64('json/plain'));

    // The Web UI's call: POST /codec/decode with the history's payloads.
    const viaHttp = await decodeOver(codecUrl, input);
    expect(viaHttp.status).toBe(200);
    expect(containsAnywhere(viaHttp.body.payloads, marker)).toBe(true);
    expect(viaHttp.body.payloads[0]!.metadata?.encoding).toBe(b64('json/plain'));
  });

  /** paylater_operator_api_requests_total by outcome, as the internal listener's /metrics counts them. */
  const operatorAuth = async (): Promise<Record<string, number>> =>
    Object.fromEntries((await stack.metrics.operatorAuth.get()).values.map((v) => [String(v.labels.outcome), v.value]));
  const delta = (before: Record<string, number>, after: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(after)
        .map(([outcome, n]) => [outcome, n - (before[outcome] ?? 0)] as const)
        .filter(([, n]) => n > 0),
    );

  it('refuses a merchant key on /codec with 401, as an unknown key, and decodes nothing; no key is a 401', async () => {
    const marker = `Merchant-Reads-${randomUUID()}`;
    const merchantReference = `enc-merchant-${randomUUID()}`;
    const res = await stack.facade(`/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference,
        redirectUrl: 'https://shop.example/return',
        customer: { name: marker },
      }),
    });
    expect(res.status).toBe(201);
    const { workflowId } = (await res.json()) as { workflowId: string };
    const input = startedInput(await show(workflowId));
    const before = await operatorAuth();

    // The merchant's key is a valid key (the facade just took it) of the wrong kind: answered as no one's.
    const asMerchant = await decodeOver(codecUrl, input, `Bearer ${MERCHANT_KEY}`);
    expect(asMerchant.status).toBe(401);
    expect(asMerchant.body).toMatchObject({
      status: 401,
      type: expect.stringMatching(/problems\/unauthorized$/),
      message: 'Invalid API key',
    });
    expect(containsAnywhere(asMerchant.body, marker)).toBe(false);

    const without = await decodeOver(codecUrl, input, null);
    expect(without.status).toBe(401);
    expect(containsAnywhere(without.body, marker)).toBe(false);
    const wrong = await decodeOver(codecUrl, input, `Bearer ${OPERATOR_KEY}-not`);
    expect(wrong.status).toBe(401);

    // The same payloads with the operator's key: decoded.
    const asOperator = await decodeOver(codecUrl, input);
    expect(asOperator.status).toBe(200);
    expect(containsAnywhere(asOperator.body.payloads, marker)).toBe(true);
    expect(delta(before, await operatorAuth())).toEqual({ merchant_key: 1, missing: 1, wrong: 1, accepted: 1 });
  });

  it('refuses the CLI with a merchant key or a wrong key: the codec endpoint is behind the operator keys', async () => {
    const merchantReference = `enc-auth-${randomUUID()}`;
    const res = await stack.facade(`/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ merchantReference, redirectUrl: 'https://shop.example/return' }),
    });
    expect(res.status).toBe(201);
    const { workflowId } = (await res.json()) as { workflowId: string };
    // The CLI keeps asking until its command timeout, then fails; the endpoint refused it every time.
    for (const [auth, outcome] of [
      [`Bearer ${MERCHANT_KEY}`, 'merchant_key'],
      ['Bearer wrong', 'wrong'],
    ] as const) {
      const before = await operatorAuth();
      await expect(show(workflowId, { endpoint: codecUrl, auth })).rejects.toThrow(/Command failed/);
      const counted = delta(before, await operatorAuth());
      expect(Object.keys(counted)).toEqual([outcome]);
      expect(counted[outcome]).toBeGreaterThan(0);
    }
  });

  it('decodes a history written under the old key once a new key was put first (rotation)', async () => {
    // Before the rotation: a client that knows only test-1 starts an application (its input encrypted under test-1).
    const [, oldKey] = parsePayloadEncryptionKeys(TEST_PAYLOAD_ENCRYPTION_KEYS);
    const beforeRotation = new Client({
      connection: stack.t.connection,
      namespace: stack.t.namespace,
      dataConverter: createDataConverter(createPayloadCodec([oldKey!])),
    });
    const marker = `Old-Key-Marker-${randomUUID()}`;
    const merchantReference = `enc-old-${randomUUID()}`;
    const input: FinanceApplicationInput = {
      merchantId: 'shop',
      merchantReference,
      application: { redirectUrl: 'https://shop.example/return', merchantReference, customer: { name: marker } },
    };
    await beforeRotation.workflow.start('financeApplicationWorkflow', {
      workflowId: financeApplicationWorkflowId('shop', merchantReference),
      taskQueue: stack.t.taskQueue,
      args: [input],
    });
    // After it (test-2 first, test-1 kept): the worker decrypts the old input and goes on, writing under test-2.
    await eventually(
      async () => (await getFinanceApplication(stack.t.client, 'shop', merchantReference)).financeApplicationId,
    );

    const workflowId = financeApplicationWorkflowId('shop', merchantReference);
    const raw = await show(workflowId);
    expect(containsAnywhere(raw, marker)).toBe(false);
    expect(startedInput(raw)[0]!.metadata?.['encryption-key-id']).toBe(b64('test-1'));
    expect(JSON.stringify(raw)).toContain(b64('test-2'));

    const decoded = await show(workflowId, { endpoint: codecUrl, auth: `Bearer ${OPERATOR_KEY}` });
    expect(containsAnywhere(decoded, marker)).toBe(true);

    // A codec endpoint whose ring dropped test-1 too early cannot read it, and says which key it needs.
    const app = express();
    const [newKey] = parsePayloadEncryptionKeys(TEST_PAYLOAD_ENCRYPTION_KEYS);
    app.use(
      codecRoutes({
        codec: createPayloadCodec([newKey!]),
        authenticate: authenticateOperator(stack.appDeps),
        corsOrigins: [],
      }),
    );
    app.use(errorHandler(pino({ level: 'silent' })));
    const tooEarly = await listen(app, 0, '127.0.0.1');
    try {
      const answer = await decodeOver(`http://127.0.0.1:${boundPort(tooEarly)}/codec`, startedInput(raw));
      expect(answer.status).toBe(400);
      expect(answer.body.message).toMatch(/encryption key id "test-1" is not in PAYLOAD_ENCRYPTION_KEYS/);
    } finally {
      await closeServer(tooEarly, 1_000);
    }
    await stack.t.client.workflow.getHandle(workflowId).terminate('test over');
  });
});
