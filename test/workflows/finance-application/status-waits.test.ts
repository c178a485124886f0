import { ApplicationFailure } from '@temporalio/workflow';
import { FinanceApplicationFailureType, STATUS_WAIT_LIMITS } from '../../../src/shared/finance-application';
import { FinanceApplication, resolveSettings } from '../../../src/workflows/finance-application/state';
import { StatusWaits } from '../../../src/workflows/finance-application/status-waits';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function waitsOn() {
  const app = new FinanceApplication('order-1', resolveSettings().settings, { now: T0, notifies: false });
  app.created({ financeApplicationId: 'fa-1', status: 'CREATED' }, new Date(T0));
  return { app, waits: new StatusWaits(app.state) };
}

function refusal(fn: () => void): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof ApplicationFailure ? (err.type ?? 'untyped') : String(err);
  }
  return undefined;
}

describe('StatusWaits (the long-poll update)', () => {
  it('validates the request: a status of 1..max characters and an integer timeout of 1..max ms', () => {
    const { waits } = waitsOn();
    const invalid = FinanceApplicationFailureType.InvalidStatusWait;
    expect(refusal(() => waits.validate({ fromStatus: 'CREATED', timeoutMs: 1000 }))).toBeUndefined();
    expect(refusal(() => waits.validate(undefined))).toBe(invalid);
    expect(refusal(() => waits.validate({ fromStatus: '', timeoutMs: 1000 }))).toBe(invalid);
    expect(
      refusal(() => waits.validate({ fromStatus: 'x'.repeat(STATUS_WAIT_LIMITS.maxStatusLength + 1), timeoutMs: 1 })),
    ).toBe(invalid);
    expect(refusal(() => waits.validate({ fromStatus: 'CREATED', timeoutMs: 1.5 }))).toBe(invalid);
    expect(refusal(() => waits.validate({ fromStatus: 'CREATED', timeoutMs: 0 }))).toBe(invalid);
    expect(
      refusal(() => waits.validate({ fromStatus: 'CREATED', timeoutMs: STATUS_WAIT_LIMITS.maxTimeoutMs + 1 })),
    ).toBe(invalid);
  });

  it('refuses new waits once the run is closing, and tells waiting callers to ask the next run', () => {
    const { waits } = waitsOn();
    expect(waits.outcome('CREATED')).toBe('timeout');
    waits.close();
    expect(refusal(() => waits.validate({ fromStatus: 'CREATED', timeoutMs: 1000 }))).toBe(
      FinanceApplicationFailureType.StatusWaitClosing,
    );
    expect(waits.outcome('CREATED')).toBe('closing');
  });

  it('answers at once, without a timer, when the status has moved or the application is done', async () => {
    const { app, waits } = waitsOn();
    // Outside a workflow a timer would throw: these resolve without one.
    await expect(waits.wait({ fromStatus: 'SUBMITTED', timeoutMs: 1000 })).resolves.toMatchObject({
      outcome: 'changed',
      state: { status: 'CREATED' },
    });
    app.finish('terminal');
    await expect(waits.wait({ fromStatus: 'CREATED', timeoutMs: 1000 })).resolves.toMatchObject({ outcome: 'done' });
    // A change counts before the end: the caller learns the new status.
    expect(waits.outcome('SUBMITTED')).toBe('changed');
  });
});
