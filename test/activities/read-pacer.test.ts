import { ReadPacer } from '../../src/activities/bank/read-pacer';

/** A clock that only moves when the pacer sleeps: spacing is checked exactly, never by wall time. */
function fakeClock() {
  let t = 1_000;
  return {
    now: () => t,
    sleep: (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      t += ms;
      return Promise.resolve();
    },
  };
}

describe('ReadPacer', () => {
  it('lets reads out one interval apart, in order, whatever arrives at once', async () => {
    const clock = fakeClock();
    const pacer = new ReadPacer(50, clock); // 20 ms apart
    const out: [number, number][] = [];
    await Promise.all(Array.from({ length: 10 }, (_, i) => pacer.wait().then(() => out.push([i, clock.now()]))));
    expect(out.map(([i]) => i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (let i = 1; i < out.length; i++) expect(out[i]![1] - out[i - 1]![1]).toBeGreaterThanOrEqual(20);
  });

  it('gives up the slot of an aborted waiter without blocking the next', async () => {
    const pacer = new ReadPacer(10);
    await pacer.wait();
    const controller = new AbortController();
    const aborted = pacer.wait(controller.signal);
    const next = pacer.wait();
    controller.abort(new Error('cancelled'));
    await expect(aborted).rejects.toThrow('cancelled');
    await expect(next).resolves.toBeUndefined();
  });

  it('refuses a rate that is not positive', () => {
    expect(() => new ReadPacer(0)).toThrow(RangeError);
  });
});
