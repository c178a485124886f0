import { initialFinanceApplicationState, type FinanceApplicationState } from '../../../src/shared/finance-application';
import { FinanceApplication, resolveSettings } from '../../../src/workflows/finance-application/state';
import { OTHER_ID_LIMITS, WebhookIds } from '../../../src/workflows/finance-application/webhook-ids';

/** The bounds of another financeApplicationId on an application's webhook URL, without a server. */

const T0 = Date.parse('2026-01-01T00:00:00Z');

function freshState(ownIdKnown = true): FinanceApplicationState {
  return {
    ...initialFinanceApplicationState('order-1', new Date(T0).toISOString()),
    ...(ownIdKnown ? { financeApplicationId: 'fa-own' } : {}),
  };
}

/** What the workflow's loop does with a batch: takes it, reads each id there is room for, answers with `bank`. */
function loop(ids: WebhookIds, bank: (id: string) => 'found' | 'not_found' | 'failed'): string[] {
  ids.take();
  const read = ids.takeCandidates();
  for (const id of read) {
    const verdict = bank(id);
    if (verdict === 'found') ids.confirmed(id);
    else if (verdict === 'not_found') ids.notFound(id);
    else ids.readFailed(id);
  }
  return read;
}

const invented = (i: number) => `invented-${String(i).padStart(5, '0')}`;

describe('WebhookIds: other financeApplicationIds, believed only when the bank confirms them, and bounded', () => {
  it('a flood of invented ids: a few reads over the life, nothing kept by id beyond them, every webhook counted', () => {
    const state = freshState();
    const ids = new WebhookIds(state);
    const reads: string[] = [];
    // 10,000 webhooks, each with a new id, taken in batches of 50 (the loop takes whatever arrived meanwhile).
    for (let i = 0; i < 10_000; i++) {
      ids.receive(invented(i));
      if (i % 50 === 49) reads.push(...loop(ids, () => 'not_found'));
    }
    expect(reads).toHaveLength(OTHER_ID_LIMITS.maxConfirmationReads);
    expect(state.otherIds).toEqual({
      reads: OTHER_ID_LIMITS.maxConfirmationReads,
      notFound: OTHER_ID_LIMITS.maxConfirmationReads,
      unchecked: 10_000 - OTHER_ID_LIMITS.maxConfirmationReads,
    });
    expect(state).toMatchObject({ webhooksReceived: 10_000, mismatchedWebhooks: 10_000 });
    expect(state.duplicateApplicationIds).toBeUndefined();
    const snapshot = ids.snapshot();
    expect(snapshot.pendingWebhookIds).toEqual([]);
    expect(snapshot.notFoundIds).toHaveLength(OTHER_ID_LIMITS.maxConfirmationReads);
    // Read once: later webhooks of an id found unknown are counted without another read.
    ids.receive(invented(0));
    expect(loop(ids, () => 'not_found')).toEqual([]);
    expect(state.otherIds!.notFound).toBe(OTHER_ID_LIMITS.maxConfirmationReads + 1);
  });

  it('never waits on more ids than there is room to confirm, whatever arrives between two takes', () => {
    const ids = new WebhookIds(freshState());
    for (let i = 0; i < 10_000; i++) ids.receive(invented(i));
    expect(ids.takeCandidates()).toHaveLength(OTHER_ID_LIMITS.maxDuplicates);
    expect(ids.snapshot().pendingWebhookIds.length).toBeLessThanOrEqual(OTHER_ID_LIMITS.maxDuplicates + 1);
  });

  it('keeps at most maxDuplicates confirmed duplicates; further real ones are counted, not reported', () => {
    const state = freshState();
    const ids = new WebhookIds(state);
    const confirmed: string[] = [];
    for (let i = 0; i < 8; i++) {
      ids.receive(`real-${i}`);
      ids.take();
      for (const id of ids.takeCandidates()) if (ids.confirmed(id)) confirmed.push(id);
    }
    expect(confirmed).toEqual(['real-0', 'real-1', 'real-2']);
    expect(state.duplicateApplicationIds).toEqual(['real-0', 'real-1', 'real-2']);
    expect(state.otherIds).toEqual({ reads: 3, notFound: 0, unchecked: 5 });
    // A confirmed duplicate's own later webhooks are neither read nor counted as unconfirmed.
    ids.receive('real-1');
    expect(loop(ids, () => 'found')).toEqual([]);
    expect(state.otherIds!.unchecked).toBe(5);
  });

  it('a failed confirmation read leaves the id unchecked; its next webhook may be read again while reads are left', () => {
    const state = freshState();
    const ids = new WebhookIds(state);
    ids.receive('dup');
    expect(loop(ids, () => 'failed')).toEqual(['dup']);
    expect(state.otherIds).toEqual({ reads: 1, notFound: 0, unchecked: 1 });
    ids.receive('dup');
    expect(loop(ids, () => 'found')).toEqual(['dup']);
    expect(state.duplicateApplicationIds).toEqual(['dup']);
  });

  it('webhooks for an id being read join it: one read, counted with its verdict', () => {
    const state = freshState();
    const ids = new WebhookIds(state);
    ids.receive('x');
    ids.take();
    const [reading] = ids.takeCandidates();
    for (let i = 0; i < 5; i++) ids.receive('x'); // arrive during the read
    ids.notFound(reading!);
    expect(ids.takeCandidates()).toEqual([]);
    expect(state.otherIds).toEqual({ reads: 1, notFound: 6, unchecked: 0 });
  });

  it('before our own id is known: a few distinct ids kept, told apart once the create answers', () => {
    const state = freshState(false);
    const ids = new WebhookIds(state);
    ids.receive('fa-own', T0);
    ids.receive('fa-own', T0 + 1);
    for (let i = 0; i < 100; i++) ids.receive(invented(i));
    expect(ids.has()).toBe(true);
    state.financeApplicationId = 'fa-own';
    ids.ourIdKnown();
    expect(ids.take()).toEqual({ ours: 2, mismatched: OTHER_ID_LIMITS.maxEarlyIds - 1, since: T0 });
    expect(ids.takeCandidates()).toHaveLength(OTHER_ID_LIMITS.maxEarlyIds - 1);
    expect(state.otherIds!.unchecked).toBe(100 - (OTHER_ID_LIMITS.maxEarlyIds - 1));
  });

  it('logs once per run: the first unconfirmed batch of a run says so, later ones only count', () => {
    const state = freshState();
    const ids = new WebhookIds(state);
    expect(ids.takeUnconfirmed()).toBeUndefined();
    for (let i = 0; i < 20; i++) ids.receive(invented(i));
    loop(ids, () => 'not_found');
    expect(ids.takeUnconfirmed()).toEqual({ notFound: 3, unchecked: 17, firstInRun: true });
    ids.receive(invented(99));
    loop(ids, () => 'not_found');
    expect(ids.takeUnconfirmed()).toEqual({ notFound: 1, unchecked: 0, firstInRun: false });
    // The next run (continue-as-new) logs once again.
    const next = new WebhookIds(state, ids.snapshot());
    next.receive(invented(0));
    next.take();
    expect(next.takeUnconfirmed()).toEqual({ notFound: 1, unchecked: 0, firstInRun: true });
  });

  it('counts not yet in the metric are carried to the next run, which emits them', () => {
    const state = freshState();
    const ids = new WebhookIds(state);
    for (let i = 0; i < 7; i++) ids.receive(invented(i));
    loop(ids, () => 'not_found');
    // This run continues as new without taking them (a task that continues as new emits nothing).
    const snapshot = ids.snapshot();
    expect(snapshot.unreportedOtherIds).toEqual({ notFound: 3, unchecked: 4 });
    const next = new WebhookIds(state, JSON.parse(JSON.stringify(snapshot)));
    expect(next.takeUnconfirmed()).toEqual({ notFound: 3, unchecked: 4, firstInRun: true });
    expect(next.snapshot().unreportedOtherIds).toBeUndefined();
  });

  it('carries its reads across continue-as-new: the life budget does not start again', () => {
    const state = freshState();
    let ids = new WebhookIds(state);
    let reads = 0;
    for (let run = 0; run < 10; run++) {
      for (let i = 0; i < 5; i++) ids.receive(invented(run * 5 + i));
      reads += loop(ids, () => 'not_found').length;
      ids = new WebhookIds(state, JSON.parse(JSON.stringify(ids.snapshot())));
    }
    expect(reads).toBe(OTHER_ID_LIMITS.maxConfirmationReads);
    expect(state.otherIds!.reads).toBe(OTHER_ID_LIMITS.maxConfirmationReads);
  });

  it('takes a snapshot of a run from before the bounds (one id per webhook) through the same bounded intake', () => {
    const state = freshState();
    const pendingWebhookIds = ['fa-own', 'fa-own', ...Array.from({ length: 10_000 }, (_, i) => invented(i))];
    const ids = new WebhookIds(state, { pendingWebhookIds });
    expect(ids.has()).toBe(true);
    expect(ids.take()).toMatchObject({ ours: 2, mismatched: 10_000 });
    expect(ids.snapshot().pendingWebhookIds).toHaveLength(OTHER_ID_LIMITS.maxDuplicates);
    expect(state.webhooksReceived).toBe(0); // counted by the run that received them
  });
});

describe('the continue-as-new snapshot under a flood (FinanceApplication)', () => {
  it('stays under 64 KiB after 10,000 invented ids, and the application still follows its own status', () => {
    const { settings } = resolveSettings();
    const app = new FinanceApplication('order-1', settings, { now: T0, notifies: true });
    app.created({ financeApplicationId: 'fa-own', status: 'CREATED' }, new Date(T0));
    for (let i = 0; i < 10_000; i++) {
      app.receiveWebhook(`${'i'.repeat(100)}-${i}`); // long ids: the snapshot must not grow with them either
      if (i === 5_000) app.receiveWebhook('fa-own');
      if (i % 100 === 99) {
        const { ours } = app.takeWebhooks();
        if (ours > 0) app.read('IN_PROGRESS', 'webhook', new Date(T0 + i));
        for (const id of app.otherIdsToConfirm()) app.otherIdNotFound(id);
      }
    }
    const bytes = Buffer.byteLength(JSON.stringify(app.snapshot()));
    expect(bytes).toBeLessThan(64 * 1024);
    expect(bytes).toBeLessThan(4 * 1024); // in fact a few hundred bytes of ids beside the state
    expect(app.state.status).toBe('IN_PROGRESS');
    expect(app.unsentDuplicates).toEqual([]);
    expect(app.unsent.map((c) => c.status)).toEqual(['CREATED', 'IN_PROGRESS']);
  });
});
