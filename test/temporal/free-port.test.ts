import { configuredPorts, freeLoopbackPort } from '../../src/temporal/free-port';

/** Ports a process picks for itself (src/temporal/free-port.ts), e.g. the Temporal Runtime's exporter at start. */
describe('freeLoopbackPort', () => {
  it('picks below the ephemeral range, never a port it was told to avoid', async () => {
    // Every port of the range but a few avoided: the pick must be one of the few (or, failing those, any free one).
    const allowed = new Set([20_001, 20_002, 20_003, 20_004, 20_005]);
    const avoid = new Set<number>();
    for (let p = 20_000; p <= 32_767; p++) if (!allowed.has(p)) avoid.add(p);
    for (let i = 0; i < 5; i++) {
      const port = await freeLoopbackPort(avoid);
      expect(avoid.has(port)).toBe(false);
    }
    const any = await freeLoopbackPort();
    expect(any).toBeGreaterThanOrEqual(20_000);
    expect(any).toBeLessThanOrEqual(32_767);
  });

  it('never hands one port out twice in a row (callers pick several, then bind them all)', async () => {
    const picked = [];
    for (let i = 0; i < 200; i++) picked.push(await freeLoopbackPort());
    expect(new Set(picked).size).toBe(picked.length);
  });

  it("avoids the ports the process's environment configures", () => {
    expect(
      [
        ...configuredPorts({
          PORT: '27799',
          INTERNAL_PORT: ' 27800 ',
          WORKER_METRICS_PORT: '0',
          TEMPORAL_UI_PORT: 'eighty',
          SANDBOX_PORT: undefined,
          REPORT: '1',
        }),
      ].sort(),
    ).toEqual([0, 27799, 27800]);
  });
});
