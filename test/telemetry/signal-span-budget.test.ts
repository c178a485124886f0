/**
 * StatusSignalSpanBudget's rule with typed fakes (the real thing, with the SDK's interceptors in a worker on a real
 * server, is in tracing.test.ts, and a flood of signals in `npm run bench -- webhook-flood` with
 * BENCH_FLOOD_TRACING=1): in each activation, the first N status-changed signals go through the tracing interceptor,
 * the rest straight to the workflow's handler (through the non-recording interceptor for a run whose SDK flags say the
 * tracing interceptor yields first); other signals and every other call are traced as before.
 */
import type { ActivateInput, SignalInput, WorkflowInboundCallsInterceptor } from '@temporalio/workflow';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { StatusSignalSpanBudget } from '../../src/workflows/interceptors';

const STATUS_CHANGED = financeApplicationStatusChangedSignal.name;

function harness(budget: number, addsNoYield = true) {
  const calls: string[] = [];
  const handled: string[] = [];
  const via =
    (name: string) =>
    (input: SignalInput, next: (input: SignalInput) => Promise<void>): Promise<void> => {
      calls.push(`${name}:${input.signalName}`);
      return next(input);
    };
  const traced = {
    handleSignal: via('traced'),
    execute: (input: unknown, next: (input: never) => Promise<unknown>) => {
      calls.push('traced:execute');
      return next(input as never);
    },
    handleUpdate: (input: unknown, next: (input: never) => Promise<unknown>) => {
      calls.push('traced:update');
      return next(input as never);
    },
    validateUpdate: (input: unknown, next: (input: never) => void) => {
      calls.push('traced:validate');
      next(input as never);
    },
    handleQuery: (input: unknown, next: (input: never) => Promise<unknown>) => {
      calls.push('traced:query');
      return next(input as never);
    },
  } as unknown as ConstructorParameters<typeof StatusSignalSpanBudget>[0];
  const budgeted = new StatusSignalSpanBudget(traced, { handleSignal: via('unrecorded') }, budget, () => addsNoYield);
  const activate = () => {
    const input = { activation: {}, batchIndex: 0 } as unknown as ActivateInput;
    budgeted.activate(input, () => undefined);
    return input;
  };
  const signal = (signalName: string, n = 1) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        budgeted.handleSignal({ signalName, args: [{ financeApplicationId: `fa-${i}` }], headers: {} }, (input) => {
          handled.push(input.signalName);
          calls.push(`handler:${input.signalName}`);
          return Promise.resolve();
        }),
      ),
    );
  return { budgeted, calls, handled, activate, signal };
}

/** Which path each signal took, in order: `traced`, `unrecorded`, or `direct` (the handler alone). */
const paths = (calls: string[]) => {
  const out: string[] = [];
  for (const c of calls) {
    if (c.startsWith('handler:')) {
      if (out.at(-1)?.endsWith('>')) out[out.length - 1] = out.at(-1)!.slice(0, -1);
      else out.push('direct');
    } else out.push(`${c.split(':')[0]}>`);
  }
  return out;
};

describe('StatusSignalSpanBudget', () => {
  it('traces the first N status-changed signals of an activation, and hands every one to the workflow, in order', async () => {
    const h = harness(3);
    h.activate();
    await h.signal(STATUS_CHANGED, 5);
    expect(paths(h.calls)).toEqual(['traced', 'traced', 'traced', 'direct', 'direct']);
    expect(h.handled).toHaveLength(5);
  });

  it('for a run whose SDK flags say the tracing interceptor yields first: the rest go through the non-recording one', async () => {
    const h = harness(2, false);
    h.activate();
    await h.signal(STATUS_CHANGED, 4);
    expect(paths(h.calls)).toEqual(['traced', 'traced', 'unrecorded', 'unrecorded']);
    expect(h.handled).toHaveLength(4);
  });

  it('starts again at each activation, and keeps the budget across the job batches of one activation', async () => {
    const h = harness(2);
    const first = h.activate();
    await h.signal(STATUS_CHANGED, 2);
    h.budgeted.activate({ ...first, batchIndex: 1 }, () => undefined); // the same activation's next batch
    h.budgeted.activate(first, () => undefined);
    await h.signal(STATUS_CHANGED);
    h.activate(); // the next workflow task
    await h.signal(STATUS_CHANGED, 2);
    expect(paths(h.calls)).toEqual(['traced', 'traced', 'direct', 'traced', 'traced']);
  });

  it('traces other signals always, and leaves them out of the count', async () => {
    const h = harness(1);
    h.activate();
    await h.signal('upgradeCheck', 3);
    await h.signal(STATUS_CHANGED, 2);
    expect(paths(h.calls)).toEqual(['traced', 'traced', 'traced', 'traced', 'direct']);
    expect(h.calls.filter((c) => c.startsWith('traced:'))).toEqual([
      'traced:upgradeCheck',
      'traced:upgradeCheck',
      'traced:upgradeCheck',
      'traced:financeApplicationStatusChanged',
    ]);
  });

  it('passes the run, updates, validators and queries to the tracing interceptor', async () => {
    const h = harness(1);
    const budgeted = h.budgeted as Required<WorkflowInboundCallsInterceptor>;
    await budgeted.execute({ args: [], headers: {} }, () => Promise.resolve(undefined));
    await budgeted.handleUpdate({ name: 'u', args: [], headers: {}, updateId: '1' }, () => Promise.resolve(undefined));
    budgeted.validateUpdate({ name: 'u', args: [], headers: {}, updateId: '1' }, () => undefined);
    await budgeted.handleQuery({ queryName: 'q', args: [], headers: {}, queryId: '1' }, () =>
      Promise.resolve(undefined),
    );
    expect(h.calls).toEqual(['traced:execute', 'traced:update', 'traced:validate', 'traced:query']);
  });
});
