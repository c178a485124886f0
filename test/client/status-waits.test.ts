/**
 * FinanceApplicationWaits' sharing rules with a typed fake of the two client calls it makes (executeUpdate under
 * withAbortSignal); the real update, server and facade are in test/api/application-wait.test.ts.
 */
import type { Client } from '@temporalio/client';
import { FinanceApplicationWaits } from '../../src/client/status-waits';
import type { StatusWaitRequest, StatusWaitResult } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId } from '../../src/shared/ids';

/** Waits are keyed by the application's workflow: its merchant and reference. */
const WF1 = financeApplicationWorkflowId('shop-a', 'ref-1');
const WF2 = financeApplicationWorkflowId('shop-a', 'ref-2');
/** Another merchant's application with the same reference: a wait of its own. */
const WF1_OF_B = financeApplicationWorkflowId('shop-b', 'ref-1');

interface Sent {
  workflowId: string;
  updateId: string;
  args: StatusWaitRequest;
  signal: AbortSignal;
  resolve(result: StatusWaitResult): void;
}

function fakeClient(): { client: Client; sent: Sent[] } {
  const sent: Sent[] = [];
  let signal: AbortSignal | undefined;
  const client = {
    withAbortSignal<R>(s: AbortSignal, fn: () => Promise<R>): Promise<R> {
      signal = s;
      return fn();
    },
    workflow: {
      getHandle: (workflowId: string) => ({
        executeUpdate: (_def: unknown, options: { updateId: string; args: [StatusWaitRequest] }) =>
          new Promise<StatusWaitResult>((resolve, reject) => {
            const s = signal!;
            s.addEventListener('abort', () => reject(new Error('cancelled')));
            sent.push({ workflowId, updateId: options.updateId, args: options.args[0], signal: s, resolve });
          }),
      }),
    },
  };
  return { client: client as unknown as Client, sent };
}

const result = (status: string): StatusWaitResult => ({
  outcome: 'changed',
  state: { status } as StatusWaitResult['state'],
});

describe('FinanceApplicationWaits', () => {
  it('shares one update per application and from-status, each waiting the longest a wait may', async () => {
    const { client, sent } = fakeClient();
    const waits = new FinanceApplicationWaits(client);
    const a = waits.join(WF1, 'CREATED');
    const b = waits.join(WF1, 'CREATED');
    const c = waits.join(WF1, 'APPROVED');
    const d = waits.join(WF2, 'CREATED');
    const e = waits.join(WF1_OF_B, 'CREATED');
    expect(sent.map((s) => [s.workflowId, s.args])).toEqual([
      [WF1, { fromStatus: 'CREATED', timeoutMs: 60_000 }],
      [WF1, { fromStatus: 'APPROVED', timeoutMs: 60_000 }],
      [WF2, { fromStatus: 'CREATED', timeoutMs: 60_000 }],
      [WF1_OF_B, { fromStatus: 'CREATED', timeoutMs: 60_000 }],
    ]);
    sent[0]!.resolve(result('IN_PROGRESS'));
    expect(await a.result).toEqual(result('IN_PROGRESS'));
    expect(await b.result).toEqual(result('IN_PROGRESS'));
    for (const w of [a, b, c, d, e]) w.leave();
    expect(waits.listening).toBe(0);
  });

  it('stops listening when the last waiter leaves, and a later waiter re-attaches to the same update', () => {
    const { client, sent } = fakeClient();
    const waits = new FinanceApplicationWaits(client);
    const a = waits.join(WF1, 'CREATED');
    const b = waits.join(WF1, 'CREATED');
    a.leave();
    a.leave(); // twice is once
    expect(sent[0]!.signal.aborted).toBe(false);
    b.leave();
    expect(sent[0]!.signal.aborted).toBe(true);
    expect(waits.listening).toBe(0);
    const c = waits.join(WF1, 'CREATED');
    expect(sent).toHaveLength(2);
    expect(sent[1]!.updateId).toBe(sent[0]!.updateId); // the server deduplicates it: no new update
    c.leave();
  });

  it('sends a new update (a new id) once the previous one has ended in the workflow', () => {
    jest.useFakeTimers({ now: 0 });
    try {
      const { client, sent } = fakeClient();
      const waits = new FinanceApplicationWaits(client, { updateTimeoutMs: 1_000 });
      waits.join(WF1, 'CREATED').leave();
      jest.setSystemTime(999);
      waits.join(WF1, 'CREATED').leave();
      jest.setSystemTime(1_000);
      waits.join(WF1, 'CREATED').leave();
      expect(sent.map((s) => s.updateId)).toEqual([sent[0]!.updateId, sent[0]!.updateId, expect.any(String)]);
      expect(sent[2]!.updateId).not.toBe(sent[0]!.updateId);
    } finally {
      jest.useRealTimers();
    }
  });

  it('after an update completed, the next waiter sends a new one', async () => {
    const { client, sent } = fakeClient();
    const waits = new FinanceApplicationWaits(client);
    const a = waits.join(WF1, 'CREATED');
    sent[0]!.resolve(result('CREATED'));
    await a.result;
    a.leave();
    await Promise.resolve();
    waits.join(WF1, 'CREATED').leave();
    expect(sent).toHaveLength(2);
    expect(sent[1]!.updateId).not.toBe(sent[0]!.updateId);
  });
});
