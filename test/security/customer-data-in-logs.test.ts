/**
 * What the logs never carry (docs/security.md, "What is redacted in logs and spans"): a customer's account ids
 * (transactionEvents carry up to 1,000 a batch) and the bank's raw error bodies. On real Temporal with the worker's
 * every log line captured (the Runtime's logger, the SDK's own lines included) and the API's: the whole stack for
 * transactionEvents delivered, coalesced and refused by the merchant; a worker against a bank over real HTTP whose
 * error answers are an HTML page and a JSON body of its own shape.
 */
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { createActivities, createBankClient, type BankClientHandle } from '../../src/activities';
import { startFinanceApplication } from '../../src/client/finance-applications';
import { bankClientLogger, createLogger } from '../../src/telemetry/logging';
import { transactionEventsStateQuery } from '../../src/shared/transaction-events';
import { transactionEventsWorkflowId } from '../../src/shared/ids';
import { startFakeBank, type FakeBank } from '../activities/helpers/fake-bank';
import { startMerchant } from '../activities/helpers/merchant-server';
import { claimTestConsent, TEST_MERCHANT } from '../helpers/merchants';
import { startTestStack, type TestStack } from '../helpers/stack';
import { connectTestTemporal, eventually, withWorker, type TemporalTestContext } from '../helpers/temporal';

/** Every line the worker's Runtime logged (workflows, activities, the SDK, the core), as text. */
const workerLines: string[] = [];
/** Every line the API's logger wrote. */
const apiLines: string[] = [];
const everyLine = () => [...workerLines, ...apiLines];

beforeAll(async () => {
  // A worker process routes the Runtime's lines into its logger: here into memory, every level.
  await Runtime.instance().shutdown();
  Runtime.install({
    logger: new DefaultLogger('DEBUG', (entry: LogEntry) =>
      workerLines.push(`${entry.message} ${inspect(entry.meta, { depth: 8, breakLength: Infinity })}`),
    ),
  });
});

describe("a customer's account ids (transactionEvents) stay out of every log line", () => {
  let stack: TestStack;
  let refusing: Awaited<ReturnType<typeof startMerchant>>;
  beforeAll(async () => {
    refusing = await startMerchant();
    stack = await startTestStack({
      logger: createLogger({ level: 'debug', destination: { write: (line: string) => void apiLines.push(line) } }),
      merchantApiKeys: [
        { name: TEST_MERCHANT, key: 'logs-test-merchant-key-0123456789ab' },
        { name: 'shop-refusing', key: 'logs-refusing-merchant-key-0123456789' },
      ],
      merchantsFile: {
        merchants: {
          'shop-refusing': {
            transactionsCallbackUrl: refusing.url.replace(/\?.*$/, ''),
            callbackAllowedOrigins: [new URL(refusing.url).origin],
          },
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await refusing?.close();
  });

  /** Emits a transactionEvent with these accounts for a consent the merchant claimed; resolves once it was batched. */
  async function transactionEvent(merchant: string, accounts: string[]): Promise<string> {
    const consentId = `logs-${randomUUID()}`;
    await claimTestConsent(stack.t, consentId, merchant);
    await stack.sandbox.control.emitTransactionEvents(consentId, { accountIds: accounts });
    const handle = stack.t.client.workflow.getHandle(transactionEventsWorkflowId(merchant, consentId));
    await eventually(async () => {
      const state = await handle.query(transactionEventsStateQuery).catch(() => undefined);
      return state && state.batches > 0 ? state : undefined;
    }, 30_000);
    return consentId;
  }

  it('coalesced without a callback URL, and refused by the merchant: counts in the lines, never an id', async () => {
    const quiet = Array.from({ length: 3 }, () => `ACCT-${randomUUID()}`);
    const refused = Array.from({ length: 3 }, () => `ACCT-${randomUUID()}`);
    // The merchant refuses every delivery: the batch is "not delivered" (its error line).
    for (let i = 0; i < 10; i++) refusing.answerNext(400);
    const quietConsent = await transactionEvent(TEST_MERCHANT, quiet);
    const refusedConsent = await transactionEvent('shop-refusing', refused);

    // The lines that report both batches were written, with their counts …
    const line = (message: string, consentId: string) =>
      eventually(() => workerLines.find((l) => l.includes(message) && l.includes(consentId)), 30_000);
    expect(await line('transactionEvents coalesced (no merchant callback configured)', quietConsent)).toMatch(
      /accounts: 3/,
    );
    expect(await line('transactionEvents batch not delivered', refusedConsent)).toMatch(/accounts: 3/);
    // … and the merchant got the accounts it is owed, the only place they go.
    expect(refusing.received.some((r) => refused.every((id) => r.body.includes(id)))).toBe(true);
    for (const id of [...quiet, ...refused]) expect(everyLine().filter((l) => l.includes(id))).toEqual([]);
  });
});

describe("the bank's raw error bodies stay out of every log line (a worker against a bank over HTTP)", () => {
  let t: TemporalTestContext;
  let bank: FakeBank;
  let client: BankClientHandle;
  beforeAll(async () => {
    t = await connectTestTemporal();
    bank = await startFakeBank({ clientId: 'logs-client', clientSecret: 'logs-secret' });
    client = createBankClient({
      authUrl: bank.url,
      baseUrl: bank.url,
      clientId: 'logs-client',
      clientSecret: 'logs-secret',
      // As the worker's (src/worker/factory.ts): the bank client's lines go through the activity's logger.
      logger: bankClientLogger(createLogger({ level: 'silent' })),
    });
  });
  afterAll(async () => {
    await client?.close();
    await bank?.close();
    await t?.close();
  });

  it.each([
    [
      'an HTML page',
      'text/html',
      (marker: string) => `<html><body><pre>${marker}\nIBAN DE00 ${marker}</pre></body></html>`,
    ],
    [
      'a JSON body of its own shape',
      'application/json',
      (marker: string) => JSON.stringify({ detail: { echo: marker } }),
    ],
  ])('a 400 with %s: the create fails with a summary of it, logged without a byte of it', async (_case, type, body) => {
    const marker = `raw-bank-body-${randomUUID()}`;
    bank.override('createApplication', (_req, res) => res.writeHead(400, { 'content-type': type }).end(body(marker)));
    const activities = createActivities({
      bank: client.client,
      webhooks: { publicBaseUrl: 'http://127.0.0.1:9', hashSecret: 'logs-test-hash-secret-0123456789' },
    });
    const failure = await withWorker(
      {
        connection: t.nativeConnection,
        taskQueue: t.taskQueue,
        workflowsPath: require.resolve('../../src/workflows'),
        activities,
      },
      () =>
        startFinanceApplication(
          t.client,
          TEST_MERCHANT,
          { merchantReference: `logs-${randomUUID()}`, application: { redirectUrl: 'https://shop.example/done' } },
          { taskQueue: t.taskQueue },
        ).then(
          () => undefined,
          (err: unknown) => err,
        ),
    );
    // The merchant's answer names the status and what kind of body came back, its size and digest: nothing of it.
    expect(failure).toBeDefined();
    const text = inspect(failure, { depth: 10 });
    expect(text).toMatch(/HTTP 400: a (JSON )?body .*\d+ bytes, sha256 [0-9a-f]{16}…; not kept/);
    expect(text).not.toContain(marker);
    if (failure instanceof WorkflowFailedError) expect(String(failure.cause?.message)).not.toContain(marker);
    // The worker logged the failure (the activity's line and the SDK's), never the body.
    await eventually(() => workerLines.find((l) => l.includes('Bank call failed') && l.includes('HTTP 400')), 30_000);
    expect(everyLine().filter((l) => l.includes(marker))).toEqual([]);
  });
});
