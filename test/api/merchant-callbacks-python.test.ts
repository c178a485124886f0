/**
 * The callbacks as a merchant in another language meets them: a merchant endpoint written in Python
 * (test/fixtures/python/standard_webhooks_merchant.py) verifies every callback the service sends it with the Python
 * `standardwebhooks` package and validates it against the served OpenAPI document's `webhooks` schemas (jsonschema).
 * Real workflows on the dev server, the bank sandbox and the merchant over real HTTP; the Python tools come from
 * scripts/python-tools.sh (.venv-tools/).
 */
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Webhook } from 'standardwebhooks';
import { awaitFinanceApplication } from '../../src/client/finance-applications';
import { freeLoopbackPort } from '../../src/temporal/free-port';
import { startTestStack, TEST_API_KEY, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { claimTestConsent, TEST_CALLBACK_SIGNING_SECRET, TEST_MERCHANT } from '../helpers/merchants';

const ROOT = join(__dirname, '..', '..');
const LEGACY_SHOP = 'legacy-shop';
/** LEGACY_SHOP's own callback signing secret (two merchants never share one). */
const LEGACY_SHOP_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const LEGACY_SHOP_KEY = 'legacy-shop-key-0123456789abcdefghij';

/** One line of the Python merchant's output: a POST it received and what it made of it. */
interface Received {
  path: string;
  version: string;
  headers: Record<string, string>;
  body: string;
  verified: boolean;
  error?: string;
  webhook?: string;
  errors?: string[];
  payload?: Record<string, unknown> & { data?: Record<string, unknown> };
}

describe('merchant callbacks verified and validated by a merchant written in Python (standardwebhooks, the served webhooks schemas)', () => {
  let python: ChildProcessWithoutNullStreams;
  const received: Received[] = [];
  let merchantUrl: string;
  let legacyShopUrl: string;
  let stack: TestStack;

  beforeAll(async () => {
    // The project's script: creates .venv-tools/ on first use (a minute at most), then only prints its python.
    const pythonBin = execFileSync(join(ROOT, 'scripts', 'python-tools.sh'), { encoding: 'utf8', timeout: 300_000 })
      .trim()
      .split('\n')
      .at(-1)!;
    const port = await freeLoopbackPort();
    merchantUrl = `http://127.0.0.1:${port}`;
    legacyShopUrl = `http://127.0.0.2:${port}`;
    stack = await startTestStack({
      merchantApiKeys: [
        { name: TEST_MERCHANT, key: TEST_API_KEY },
        { name: LEGACY_SHOP, key: LEGACY_SHOP_KEY },
      ],
      // TEST_MERCHANT takes the default (the current version); LEGACY_SHOP stays on today's body. Each merchant has
      // its own secret and origin (the Python merchant listens on 127.0.0.1 and 127.0.0.2, one port).
      merchantsFile: {
        merchants: {
          [TEST_MERCHANT]: {
            callbackSigningSecrets: [TEST_CALLBACK_SIGNING_SECRET],
            callbackAllowedOrigins: [merchantUrl],
            transactionsCallbackUrl: `${merchantUrl}/transactions`,
          },
          [LEGACY_SHOP]: {
            callbackPayloadVersion: 'legacy',
            callbackSigningSecrets: [LEGACY_SHOP_SECRET],
            callbackAllowedOrigins: [legacyShopUrl],
          },
        },
      },
    });
    python = spawn(
      pythonBin,
      [
        join(ROOT, 'test', 'fixtures', 'python', 'standard_webhooks_merchant.py'),
        ...['--secret', TEST_CALLBACK_SIGNING_SECRET, '--secret', LEGACY_SHOP_SECRET],
        ...['--host', '127.0.0.1', '--host', '127.0.0.2', '--spec', `${stack.internalUrl}/openapi.json`],
        ...['--port', String(port)],
      ],
      { stdio: 'pipe' },
    );
    let stderr = '';
    python.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines = createInterface({ input: python.stdout });
    await new Promise<void>((resolve, reject) => {
      python.once('exit', (code) => reject(new Error(`the Python merchant exited (${code}): ${stderr}`)));
      lines.on('line', (line) => {
        const record = JSON.parse(line) as Received | { listening: number };
        if ('listening' in record) resolve();
        else received.push(record);
      });
    });
  }, 360_000);

  afterAll(async () => {
    python?.kill();
    await stack?.close();
  });

  const start = (ref: string, key: string) =>
    fetch(`${stack.internalUrl}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({
        merchantReference: ref,
        redirectUrl: 'https://shop.example/done',
        callbackUrl: `${key === LEGACY_SHOP_KEY ? legacyShopUrl : merchantUrl}/finance?shop=${key === LEGACY_SHOP_KEY ? LEGACY_SHOP : TEST_MERCHANT}`,
      }),
    });
  /** POSTs bytes with headers to the Python merchant, as the service would: its answer's status. */
  const postToMerchant = async (body: string, headers: Record<string, string>) =>
    (await fetch(`${merchantUrl}/finance`, { method: 'POST', headers, body })).status;

  it('each status change and a transactions batch arrive in the current payload { type, timestamp, data }: verified in Python, valid against the served webhooks schemas', async () => {
    const ref = `py-${randomUUID()}`;
    expect((await start(ref, TEST_API_KEY)).status).toBe(201);
    const final = await awaitFinanceApplication(stack.t.client, TEST_MERCHANT, ref);
    expect(final).toMatchObject({ done: true, status: 'COMPLETED' });

    const ours = await eventually(() => {
      const got = received.filter((r) => r.payload?.data?.merchantReference === ref);
      return got.length === final.notificationsSent ? got : undefined;
    });
    expect(ours.length).toBeGreaterThanOrEqual(2); // at least CREATED and COMPLETED
    for (const r of ours) {
      expect(r).toMatchObject({
        verified: true,
        version: '2026-11-25',
        webhook: 'finance-application.status-changed',
        errors: [],
      });
    }
    // The data is what the workflow recorded, in order; the timestamp is when the service learned the status.
    expect(ours.map((r) => r.payload)).toEqual(
      final.history.map((change) => ({
        type: 'finance-application.status-changed',
        timestamp: new Date(change.at).toISOString(),
        data: { merchantReference: ref, financeApplicationId: final.financeApplicationId, ...change },
      })),
    );

    const consentId = `py-tx-${randomUUID()}`;
    await claimTestConsent(stack.t, consentId);
    await stack.sandbox.control.emitTransactionEvents(consentId, { count: 2, accountIds: ['OPB-1', 'OPB-2'] });
    const batch = await eventually(() => received.find((r) => r.payload?.data?.consentId === consentId));
    expect(batch).toMatchObject({
      path: '/transactions',
      verified: true,
      webhook: 'consent.transactions-changed',
      errors: [],
      payload: {
        type: 'consent.transactions-changed',
        timestamp: expect.any(String),
        data: { consentId, accounts: [{ accountId: 'OPB-1' }, { accountId: 'OPB-2' }], batch: 1 },
      },
    });
  });

  it('the same bytes sent again verify in Python; a tampered body or a re-serialised one does not (401); a signed body its schema refuses is caught (400)', async () => {
    const ref = `py-tamper-${randomUUID()}`;
    expect((await start(ref, TEST_API_KEY)).status).toBe(201);
    const [first] = await eventually(() => {
      const got = received.filter((r) => r.payload?.data?.merchantReference === ref);
      return got.length > 0 ? got : undefined;
    });
    const headers = { ...first!.headers, 'content-type': 'application/json' };
    const before = received.length;

    expect(await postToMerchant(first!.body, headers)).toBe(204);
    const tampered = first!.body.replace(/"status":"[A-Z_]+"/, '"status":"COMPLETED"');
    expect(tampered).not.toBe(first!.body);
    expect(await postToMerchant(tampered, headers)).toBe(401);
    // The same JSON with other whitespace: a verifier must see the raw bytes, not a parsed and re-written body.
    const reserialised = JSON.stringify(JSON.parse(first!.body), null, 1);
    expect(await postToMerchant(reserialised, headers)).toBe(401);

    // Signed correctly but without `data.status`: the served schema refuses it (the check can fail).
    const payload = JSON.parse(first!.body) as { data: Record<string, unknown> };
    const { status: _status, ...withoutStatus } = payload.data;
    const invalid = JSON.stringify({ ...payload, data: withoutStatus });
    const now = String(Math.floor(Date.now() / 1000));
    const signed = new Webhook(TEST_CALLBACK_SIGNING_SECRET).sign(
      first!.headers['webhook-id']!,
      new Date(Number(now) * 1000),
      invalid,
    );
    expect(await postToMerchant(invalid, { ...headers, 'webhook-timestamp': now, 'webhook-signature': signed })).toBe(
      400,
    );

    const replies = await eventually(() => (received.length >= before + 4 ? received.slice(before) : undefined));
    expect(replies.map((r) => [r.verified, r.error ?? r.errors])).toEqual([
      [true, []],
      [false, 'No matching signature found'],
      [false, 'No matching signature found'],
      [true, ["body data: 'status' is a required property"]],
    ]);
  });

  it('a merchant set to legacy still gets today’s body, signed the same way and valid against the deprecated legacy schema', async () => {
    const ref = `py-legacy-${randomUUID()}`;
    expect((await start(ref, LEGACY_SHOP_KEY)).status).toBe(201);
    const final = await awaitFinanceApplication(stack.t.client, LEGACY_SHOP, ref);
    const theirs = await eventually(() => {
      const got = received.filter((r) => r.payload?.merchantReference === ref);
      return got.length === final.notificationsSent ? got : undefined;
    });
    expect(theirs.length).toBeGreaterThanOrEqual(2);
    for (const r of theirs) {
      expect(r).toMatchObject({
        verified: true,
        version: 'legacy',
        webhook: 'finance-application.status-changed (legacy)',
        errors: [],
      });
    }
    // Today's body, field for field: the event's fields beside its type, no envelope.
    expect(theirs.map((r) => r.payload)).toEqual(
      final.history.map((change) => ({
        type: 'finance-application.status-changed',
        merchantReference: ref,
        financeApplicationId: final.financeApplicationId,
        ...change,
      })),
    );
    // And the current merchant's callbacks never reached this one's URL, nor the reverse.
    expect(received.filter((r) => r.path.includes(LEGACY_SHOP)).every((r) => r.version === 'legacy')).toBe(true);
    expect(received.filter((r) => r.path.includes(`shop=${TEST_MERCHANT}`)).every((r) => r.version !== 'legacy')).toBe(
      true,
    );
  });
});
