/**
 * One state said the same way everywhere (src/shared/application-phase.ts), and what the Web UI shows of a finance
 * application (src/workflows/finance-application/details.ts), on the whole stack: an application whose status is
 * final while its callback endpoint still refuses reads `notifying` in the API's answer, in the API's list, in the
 * console's list and on the console's page, then `closed` everywhere once the callbacks are taken. Its current details
 * (through the codec: the query's answer is encrypted) say its status, how it was learned, the next poll and the
 * callbacks; no timer in its history lacks a summary.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import { PHASE_LABELS, type ApplicationPhase } from '../../src/shared/application-phase';
import { startMerchant } from '../activities/helpers/merchant-server';
import { recordFinanceHistory } from '../helpers/histories';
import { TEST_MERCHANT } from '../helpers/merchants';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually, testPayloadCodec } from '../helpers/temporal';

const secret = `whsec_${Buffer.from('phase test callbacks'.padEnd(32, '.')).toString('base64')}`;

describe('application phase and Web UI details (whole stack)', () => {
  let stack: TestStack;
  let merchant: Awaited<ReturnType<typeof startMerchant>>;
  beforeAll(async () => {
    merchant = await startMerchant();
    stack = await startTestStack({
      callbacks: { allowedOrigins: new URL(merchant.url).origin, signingSecrets: [secret] },
    });
  });
  // Every answer of the API in this file must match the OpenAPI document (the new `phase` included).
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => {
    await stack?.close();
    await merchant?.close();
  });

  const handleOf = (ref: string) => stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref));
  const create = async (ref: string, callbackUrl?: string) => {
    const res = await stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        merchantReference: ref,
        redirectUrl: 'https://shop.example/done',
        ...(callbackUrl ? { callbackUrl } : {}),
      }),
    });
    expect(res.status).toBe(201);
  };
  /** The workflow's current details, as the Web UI reads them (the SDK's metadata query), decoded by the client. */
  const details = async (ref: string) =>
    (await handleOf(ref).query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';

  async function signIn(): Promise<string> {
    const res = await fetch(`${stack.internalUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key: stack.apiKey }).toString(),
    });
    expect(res.status).toBe(303);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  }
  const page = async (path: string, cookie: string) =>
    (await (await fetch(`${stack.internalUrl}${path}`, { headers: { cookie } })).text()).replace(/\s+/g, ' ');

  /** The phase each reader gives: the API's answer, the API's list, the console's list, the console's page. */
  async function phases(ref: string, cookie: string) {
    const one = (await (await stack.facade(`/applications/${ref}`)).json()) as { phase: string; done: boolean };
    const list = (await (await stack.facade(`/applications?referencePrefix=${ref}`)).json()) as {
      applications: { phase: string; done: boolean }[];
    };
    const phaseIn = (html: string) => /data-phase="([a-z]+)"/.exec(html)?.[1];
    const listPage = await page(`/console/applications?reference=${ref}`, cookie);
    const appPage = await page(`/console/applications/${ref}`, cookie);
    return {
      api: one.phase,
      apiDone: one.done,
      apiList: list.applications[0]?.phase,
      apiListDone: list.applications[0]?.done,
      consoleList: phaseIn(listPage),
      consolePage: phaseIn(appPage),
      appPage,
    };
  }
  const agreeOn = (phase: ApplicationPhase, done: boolean) => ({
    api: phase,
    apiDone: done,
    apiList: phase,
    apiListDone: done,
    consoleList: phase,
    consolePage: phase,
  });

  it('a final status whose callback is still retried reads `notifying` in the API, its list and the console; then `closed`', async () => {
    const ref = `phase-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript(
      { steps: [{ status: 'COMPLETED', afterMs: 500 }] },
      { merchantReference: ref },
    );
    // The first callback (CREATED) is refused three times: 5 s, then 10 s between attempts (its retry policy).
    for (let i = 0; i < 3; i++) merchant.answerNext(503);
    await create(ref, merchant.url);
    const cookie = await signIn();

    const notifying = await eventually(async () => {
      const seen = await phases(ref, cookie);
      return seen.api === 'notifying' && seen.apiList === 'notifying' ? seen : undefined;
    }, 30_000);
    const { appPage, ...said } = notifying;
    expect(said).toEqual(agreeOn('notifying', true));
    expect(appPage).toContain(PHASE_LABELS.notifying);
    expect(appPage).not.toContain('closed (terminal)');

    // Between attempts the page says the next one is scheduled, not that it is being sent.
    const retrying = await eventually(async () => {
      const html = await page(`/console/applications/${ref}`, cookie);
      return html.includes('Retrying: attempt') ? html : undefined;
    }, 30_000);
    expect(retrying).toMatch(/Retrying: attempt \d+ failed with HTTP 503: .*; attempt \d+ is scheduled at <time/);
    // Times are readable (UTC until the browser's script makes them local), with a phrase where it helps.
    expect(retrying).toMatch(
      /<time datetime="[^"]+" title="[^"]+" data-local>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/time\s*>/,
    );
    expect(retrying).toMatch(/\((in \d+ s|\d+ s ago)\)/);

    // The Web UI's details, decoded through the codec: the final status and the callback being sent.
    const during = await details(ref);
    expect(during).toContain('**COMPLETED**, finished (terminal); the last callbacks are still being sent');
    expect(during).toContain('Callbacks: sending CREATED');

    // Once the merchant takes them, the run ends: `closed` everywhere.
    await handleOf(ref).result();
    const closed = await eventually(async () => {
      const seen = await phases(ref, cookie);
      return seen.apiList === 'closed' ? seen : undefined;
    }, 30_000);
    const { appPage: closedPage, ...saidAfter } = closed;
    expect(saidAfter).toEqual(agreeOn('closed', true));
    expect(closedPage).not.toContain('callback-in-flight');

    const history = await handleOf(ref).fetchHistory();
    await expectEveryTimerSummarised(history, ['Deadline: stop following the application at']);
    recordFinanceHistory(history, 'callback-retried-details');
  });

  it('a followed application: the current details say its status, how it was learned and the next poll, encrypted on the wire', async () => {
    const ref = `phase-following-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript({ steps: [] }, { merchantReference: ref });
    await create(ref);
    const text = await eventually(async () => {
      const d = await details(ref);
      return d.includes('**CREATED**') ? d : undefined;
    });
    expect(text).toContain("Learned from the bank's answer to the create at ");
    expect(text).toMatch(/Next poll about \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(every 30 s now/);
    expect(text).toContain('Callbacks: none (no callback URL)');

    // What the server holds (and what the Web UI gets without the codec) is ciphertext.
    const raw = await stack.t.client.workflowService.queryWorkflow({
      namespace: stack.t.namespace,
      execution: { workflowId: financeApplicationWorkflowId(TEST_MERCHANT, ref) },
      query: { queryType: '__temporal_workflow_metadata' },
    });
    const encoding = Buffer.from(raw.queryResult!.payloads![0]!.metadata!.encoding!).toString('utf8');
    expect(encoding).toBe('binary/encrypted');

    // A status wait (the API's long-poll) is a timer of its own: summarised too.
    const waited = await stack.facade(`/applications/${ref}?waitForChangeFrom=CREATED&timeout=1s`);
    expect(waited.status).toBe(200);
    expect(((await waited.json()) as { phase: string }).phase).toBe('following');
    await handleOf(ref).terminate('test over');
    await expectEveryTimerSummarised(await handleOf(ref).fetchHistory(), [
      'Deadline: stop following the application at',
      'Status wait: answer in ',
    ]);
  });
});

/** Every TimerStarted event has a summary (user metadata, encrypted like every payload); `expected` are among them. */
async function expectEveryTimerSummarised(
  history: temporal.api.history.v1.IHistory,
  expected: string[],
): Promise<void> {
  const timers = (history.events ?? []).filter(
    (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED,
  );
  expect(timers.length).toBeGreaterThan(0);
  const summaries: string[] = [];
  for (const timer of timers) {
    const summary = timer.userMetadata?.summary;
    expect(summary).toBeTruthy();
    const [decoded] = await testPayloadCodec.decode([summary as Payload]);
    summaries.push(defaultPayloadConverter.fromPayload<string>(decoded!));
  }
  for (const text of expected) expect(summaries).toContainEqual(expect.stringContaining(text));
}
