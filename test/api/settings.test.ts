/**
 * Settings from the environment and per request, on the whole stack (real dev server, the sandbox over HTTP, the
 * real worker and app): another bank's vocabulary ends applications on its terminal statuses; the poll policy,
 * deadline, refresh and transactionEvents settings reach the workflows the facade and the receiver start; requests
 * out of bounds get a 400 naming the field.
 */
import { randomUUID } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { loadConfig } from '../../src/config';
import { happyPath } from '../../src/shared/application-settings';
import { financeApplicationStateQuery } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId, transactionEventsWorkflowId } from '../../src/shared/ids';
import { startTestStack, type TestStack } from '../helpers/stack';
import { eventually } from '../helpers/temporal';
import { claimTestConsent, TEST_MERCHANT } from '../helpers/merchants';

/** Another bank: none of the sandbox's default status names. */
const OTHER_BANK_ENV = {
  BANK_STATUS_ORDER: 'RECEIVED,UNDER_REVIEW,OFFERED,PAID_OUT,REJECTED',
  BANK_TERMINAL_STATUSES: 'PAID_OUT,REJECTED',
  APPLICATION_DEADLINE: '2h',
  REFRESH_TIMEOUT: '7m',
  REFRESH_QUIET_PERIOD: '1s',
  TRANSACTION_EVENTS_WINDOW: '3s',
};

/** Durations (seconds) of the timers a workflow started. */
function timerSeconds(history: temporal.api.history.v1.IHistory): number[] {
  return (history.events ?? [])
    .map((e) => e.timerStartedEventAttributes?.startToFireTimeout)
    .filter((d): d is NonNullable<typeof d> => !!d)
    .map((d) => Number(d.seconds ?? 0) + (d.nanos ?? 0) / 1e9);
}

describe('settings from the environment and per request (whole stack)', () => {
  const config = loadConfig(OTHER_BANK_ENV);
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      settings: config.settings,
      // The sandbox scripted with the other bank's names: RECEIVED → UNDER_REVIEW → OFFERED → PAID_OUT.
      sandbox: { lifecycle: { stepMs: 400, statuses: happyPath(config.settings.applications) } },
    });
  });
  // Every answer of both listeners (the 400s for settings out of bounds included) must match the OpenAPI document.
  afterEach(() => stack?.openApi.expectAllMatched());
  afterAll(async () => stack?.close());

  const start = (body: Record<string, unknown>) =>
    stack.facade('/applications', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirectUrl: 'https://shop.example/return', ...body }),
    });
  const doneState = (ref: string) =>
    eventually(
      async () => {
        const res = await stack.facade(`/applications/${ref}`);
        const body = (await res.json()) as { done: boolean; status: string; history: { status: string }[] };
        return body.done ? body : undefined;
      },
      60_000,
      250,
    );

  it('an application of a bank with another vocabulary ends on its terminal status', async () => {
    const ref = `vocab-${randomUUID()}`;
    const res = await start({ merchantReference: ref });
    expect(res.status).toBe(201);
    const state = await doneState(ref);
    expect(state.status).toBe('PAID_OUT');
    // Recorded in the bank's order (reads may skip a status the bank moved past), ending on the terminal one.
    const path = ['RECEIVED', 'UNDER_REVIEW', 'OFFERED', 'PAID_OUT'];
    const seen = state.history.map((h) => h.status);
    expect(seen).toEqual(path.filter((s) => seen.includes(s)));
    expect(seen.at(-1)).toBe('PAID_OUT');
    const result = (await stack.t.client.workflow
      .getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref))
      .result()) as {
      outcome?: string;
    };
    expect(result.outcome).toBe('terminal');
  });

  it('the other terminal status ends it too, and a stale earlier status after it is ignored', async () => {
    const ref = `vocab-${randomUUID()}`;
    stack.sandbox.control.setApplicationScript(
      {
        initialStatus: 'RECEIVED',
        steps: [
          { status: 'UNDER_REVIEW', afterMs: 300 },
          { status: 'REJECTED', afterMs: 300 },
        ],
      },
      { merchantReference: ref },
    );
    expect((await start({ merchantReference: ref })).status).toBe(201);
    const state = await doneState(ref);
    expect(state.status).toBe('REJECTED');
    const id = stack.sandbox.control.applications().find((a) => a.createRequest.merchantReference === ref)!;
    expect(id.statusHistory.map((h) => h.status)).toEqual(['RECEIVED', 'UNDER_REVIEW', 'REJECTED']);
  });

  it('the environment deadline and a per-request override reach the workflow', async () => {
    const deadlineOf = async (ref: string) => {
      const handle = stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref));
      const { startTime } = await handle.describe();
      const { deadlineAt } = await handle.query(financeApplicationStateQuery);
      return (Date.parse(deadlineAt) - startTime.getTime()) / 1000;
    };
    // Applications that never end (the bank keeps them at RECEIVED): their deadline is still ahead.
    const fromEnv = `deadline-${randomUUID()}`;
    const asked = `deadline-${randomUUID()}`;
    for (const ref of [fromEnv, asked])
      stack.sandbox.control.setApplicationScript({ initialStatus: 'RECEIVED', steps: [] }, { merchantReference: ref });
    expect((await start({ merchantReference: fromEnv })).status).toBe(201);
    expect(
      (await start({ merchantReference: asked, settings: { deadline: '90m', fastPollInterval: 2_000 } })).status,
    ).toBe(201);
    expect(Math.abs((await deadlineOf(fromEnv)) - 7_200)).toBeLessThan(60);
    expect(Math.abs((await deadlineOf(asked)) - 5_400)).toBeLessThan(60);
    for (const ref of [fromEnv, asked])
      await stack.t.client.workflow.getHandle(financeApplicationWorkflowId(TEST_MERCHANT, ref)).terminate('test over');
  });

  it.each([
    [{ fastPollInterval: '100ms' }, 'settings.fastPollInterval', /between 1s and 1h/],
    [{ deadline: '400d' }, 'settings.deadline', /between 1m and 365d/],
    [{ pollBackoffFactor: 0.5 }, 'settings.pollBackoffFactor', /.+/],
    [{ slowPollInterval: 'soon' }, 'settings.slowPollInterval', /.+/],
    [{ noWebhookPollInterval: '1h' }, 'settings.noWebhookPollInterval', /above the slow interval \(15m\)/],
    [{ fastPollInterval: '20m' }, 'settings.slowPollInterval', /below the fast interval \(20m\)/],
    [{ statusOrder: { A: 1 } }, 'settings.statusOrder', /unknown field; allowed: fastPollInterval/],
  ])('POST /applications with settings %j is a 400 naming %s; nothing is started', async (settings, path, message) => {
    const ref = `bad-${randomUUID()}`;
    const res = await start({ merchantReference: ref, settings });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { details: { path: string; message: string }[] };
    expect(body.details).toContainEqual({ path, message: expect.stringMatching(message) });
    expect(stack.sandbox.control.applications().some((a) => a.createRequest.merchantReference === ref)).toBe(false);
  });

  it('a refresh takes REFRESH_TIMEOUT from the environment; out of bounds per request is a 400', async () => {
    const consentId = `consent-${randomUUID()}`;
    const bad = await stack.facade(`/consents/${consentId}/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ timeout: '2d' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { details: { path: string }[] }).details).toContainEqual(
      expect.objectContaining({ path: 'timeout' }),
    );
    const res = await stack.facade(`/consents/${consentId}/refresh`, { method: 'POST' });
    expect(res.status).toBe(202);
    const { workflowId } = (await res.json()) as { workflowId: string };
    const handle = stack.t.client.workflow.getHandle(workflowId);
    expect(timerSeconds(await handle.fetchHistory())).toContain(420);
    await handle.result();
  });

  it('the receiver starts transactionEvents workflows with TRANSACTION_EVENTS_WINDOW', async () => {
    const consentId = `consent-${randomUUID()}`;
    await claimTestConsent(stack.t, consentId);
    await stack.sandbox.control.emitTransactionEvents(consentId, { count: 2 });
    const handle = stack.t.client.workflow.getHandle(transactionEventsWorkflowId(TEST_MERCHANT, consentId));
    const timers = await eventually(async () => {
      const seconds = timerSeconds(await handle.fetchHistory());
      return seconds.includes(3) ? seconds : undefined;
    });
    expect(timers).toContain(3);
    await handle.terminate('test over');
  });
});
