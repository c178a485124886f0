import { ServiceError } from '@temporalio/client';
import { boundedAnswer, deadlineRanOut, whenAborted, withReadDeadline } from '../../src/api/deadlines';
import { HttpError } from '../../src/api/problem-details';

/** A gRPC error as @grpc/grpc-js raises it (code, details, metadata), wrapped the way the Temporal client does. */
function grpcError(code: number, details: string): Error {
  const cause = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Failed to query workflow', { cause });
}

describe('deadlineRanOut', () => {
  const deadline = 1_000_000;

  it('is true for DEADLINE_EXCEEDED whenever it comes', () => {
    expect(deadlineRanOut(grpcError(4, 'context deadline exceeded'), deadline, deadline - 5_000)).toBe(true);
  });

  it('is true for CANCELLED at the deadline (the server ran out of the deadline it was given)', () => {
    expect(deadlineRanOut(grpcError(1, 'context canceled'), deadline, deadline - 100)).toBe(true);
    expect(deadlineRanOut(grpcError(1, 'context canceled'), deadline, deadline + 10)).toBe(true);
  });

  it('is false for CANCELLED well before the deadline, and for other codes', () => {
    expect(deadlineRanOut(grpcError(1, 'context canceled'), deadline, deadline - 1_000)).toBe(false);
    expect(deadlineRanOut(grpcError(14, 'connection refused'), deadline, deadline)).toBe(false);
    expect(deadlineRanOut(new Error('plain'), deadline, deadline)).toBe(false);
  });
});

describe('withReadDeadline', () => {
  const failing = (err: Error, afterMs: number) => ({
    withDeadline: async <R>(_deadline: number, _fn: () => Promise<R>): Promise<R> => {
      await new Promise((r) => setTimeout(r, afterMs));
      throw err;
    },
  });

  it('answers "no worker answered" when the server cancels at the deadline', async () => {
    const call = withReadDeadline(
      { client: failing(grpcError(1, 'context canceled'), 60), readDeadlineMs: 50 },
      'The read',
      () => Promise.resolve(1),
    );
    await expect(call).rejects.toThrow(HttpError);
    await expect(call).rejects.toThrow(/no worker answered/);
  });

  it('passes Temporal being unreachable through unchanged', async () => {
    const err = grpcError(14, 'connection refused');
    await expect(
      withReadDeadline({ client: failing(err, 1), readDeadlineMs: 5_000 }, 'The read', () => Promise.resolve(1)),
    ).rejects.toBe(err);
  });
});

describe("boundedAnswer and whenAborted (the receiver's bound on each signal)", () => {
  const never = () => new Promise<never>(() => undefined);

  it("answers with the call, or its 503 at the bound, or the abort's error once the signal aborts", async () => {
    await expect(boundedAnswer(Promise.resolve('ok'), 1_000, 'Temporal')).resolves.toBe('ok');
    await expect(boundedAnswer(never(), 20, 'Temporal')).rejects.toMatchObject({ status: 503 });
    const controller = new AbortController();
    const shuttingDown = new HttpError(503, 'shutting down');
    const waiting = [1, 2, 3].map(() =>
      boundedAnswer(never(), 60_000, 'Temporal', controller.signal, () => shuttingDown),
    );
    const answered = boundedAnswer(Promise.resolve('done'), 60_000, 'Temporal', controller.signal, () => shuttingDown);
    await expect(answered).resolves.toBe('done');
    controller.abort();
    for (const w of waiting) await expect(w).rejects.toBe(shuttingDown);
    // Already aborted: at once.
    await expect(boundedAnswer(never(), 60_000, 'Temporal', controller.signal, () => shuttingDown)).rejects.toBe(
      shuttingDown,
    );
  });

  it('runs each callback once when the signal aborts, and none it was told to forget', () => {
    const controller = new AbortController();
    const ran: string[] = [];
    whenAborted(controller.signal, () => ran.push('a'));
    const forgetB = whenAborted(controller.signal, () => ran.push('b'));
    whenAborted(controller.signal, () => ran.push('c'));
    forgetB();
    controller.abort();
    controller.abort();
    expect(ran).toEqual(['a', 'c']);
  });
});
