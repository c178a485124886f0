import pino from 'pino';
import { isPermanentTemporalError, untilReachable } from '../../src/temporal/wait-for-temporal';

const logger = pino({ level: 'silent' });
const grpcError = (code: number) => Object.assign(new Error(`code ${code}`), { code });

describe('untilReachable', () => {
  it('retries an unreachable server until it answers', async () => {
    let calls = 0;
    const result = await untilReachable(
      () => {
        calls += 1;
        return calls < 4 ? Promise.reject(grpcError(14)) : Promise.resolve('up'); // 14: UNAVAILABLE
      },
      { logger, what: 'Temporal', initialDelayMs: 1, maxDelayMs: 2 },
    );
    expect([result, calls]).toEqual(['up', 4]);
  });

  it('throws what waiting cannot cure at once: unknown namespace, refused credentials', async () => {
    for (const code of [5, 7, 16]) {
      let calls = 0;
      await expect(
        untilReachable(
          () => {
            calls += 1;
            return Promise.reject(grpcError(code));
          },
          { logger, what: 'Temporal', initialDelayMs: 1 },
        ),
      ).rejects.toMatchObject({ code });
      expect(calls).toBe(1);
    }
    expect(isPermanentTemporalError(grpcError(14))).toBe(false);
    expect(isPermanentTemporalError(new Error('connect ECONNREFUSED'))).toBe(false);
  });

  it('stops waiting when the process shuts down', async () => {
    const controller = new AbortController();
    const waiting = untilReachable(() => Promise.reject(new Error('ECONNREFUSED')), {
      logger,
      what: 'Temporal',
      initialDelayMs: 60_000,
      signal: controller.signal,
    });
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
  });

  it('says what it waits for at warn level, then at most every warnEveryMs', async () => {
    const lines: { level: number; msg: string }[] = [];
    const capture = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    let calls = 0;
    await untilReachable(() => (++calls < 5 ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve()), {
      logger: capture,
      what: 'Temporal at x:1 (namespace n)',
      initialDelayMs: 1,
      maxDelayMs: 1,
      warnEveryMs: 60_000,
    });
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'waiting for Temporal at x:1 (namespace n); not ready until it answers',
    ]);
    expect(lines.at(-1)!.msg).toBe('Temporal at x:1 (namespace n) is reachable');
  });
});
