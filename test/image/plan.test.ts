import {
  containerSpecs,
  envFile,
  healthcheckProblem,
  HOST_PORT_RANGE,
  parseOptions,
  pickPorts,
  shutdownTimeline,
  stopProblem,
} from './plan';

/** The pure part of `npm run test:image` (test/image/plan.ts); the run itself needs podman (test/image/run.ts). */
describe('npm run test:image: its plan', () => {
  it("builds by default; --no-build or PAYLATER_IMAGE_NO_BUILD=1 reuse the image; its own tag, not compose's", () => {
    expect(parseOptions([], {})).toEqual({ build: true, tag: 'image-test', keep: false });
    expect(parseOptions(['--no-build'], {}).build).toBe(false);
    expect(parseOptions([], { PAYLATER_IMAGE_NO_BUILD: '1' }).build).toBe(false);
    expect(parseOptions(['--build'], { PAYLATER_IMAGE_NO_BUILD: '1' }).build).toBe(true);
    expect(parseOptions(['--keep'], { PAYLATER_IMAGE_TAG: 'rc-1' })).toEqual({ build: true, tag: 'rc-1', keep: true });
    expect(() => parseOptions(['--fast'], {})).toThrow(/unknown argument --fast/);
    expect(() => parseOptions([], { PAYLATER_IMAGE_TAG: 'a b' })).toThrow(/not an image tag/);
  });

  it('takes free host ports in 18000-18999 only, wrapping around', async () => {
    const taken = new Set([18998, 18000]);
    const isFree = (p: number) => Promise.resolve(!taken.has(p));
    await expect(pickPorts(4, isFree, 18997)).resolves.toEqual([18997, 18999, 18001, 18002]);
    await expect(pickPorts(2, isFree)).resolves.toEqual([18001, 18002]);
    await expect(pickPorts(2, () => Promise.resolve(false))).rejects.toThrow(/only 0 free ports in 18000-18999/);
    const all = await pickPorts(1000, () => Promise.resolve(true), 18500);
    expect(Math.min(...all)).toBe(HOST_PORT_RANGE.low);
    expect(Math.max(...all)).toBe(HOST_PORT_RANGE.high);
  });

  it("runs the three processes with compose's commands, the image's ports and the host's loopback as 10.0.2.2", () => {
    const ports = { temporal: 18001, sandbox: 18002, apiPublic: 18003, apiInternal: 18004, worker: 18005 };
    const secrets = {
      webhookHash: 'h'.repeat(48),
      securityHeader: 'Basic abc',
      bankClientSecret: 'b',
      payloadKeys: 'key-1:x',
      merchantKey: 'm'.repeat(48),
      operatorKey: 'o'.repeat(48),
    };
    const [sandbox, api, worker] = containerSpecs(ports, secrets, '10.0.2.2');
    expect([sandbox, api, worker].map((s) => s!.command)).toEqual([
      ['node', 'dist/sandbox/server.js'],
      ['node', 'dist/api/server.js'],
      ['node', 'dist/worker.js'],
    ]);
    expect(sandbox!.ports).toEqual({ 4010: 18002 });
    expect(api!.ports).toEqual({ 3000: 18003, 3001: 18004 });
    expect(worker!.ports).toEqual({ 9464: 18005 });
    expect(sandbox!.env.SANDBOX_ACCOUNT_WEBHOOK_URL).toBe('http://10.0.2.2:18003/webhooks/accounts');
    for (const app of [api!, worker!]) {
      expect(app.env.TEMPORAL_ADDRESS).toBe('10.0.2.2:18001');
      expect(app.env.BANK_BASE_URL).toBe('http://10.0.2.2:18002');
      expect(app.env.PUBLIC_BASE_URL).toBe('http://10.0.2.2:18003');
      expect(app.env.BANK_CLIENT_SECRET).toBe(sandbox!.env.SANDBOX_CLIENT_SECRET);
      expect(app.env.WEBHOOK_SECURITY_HEADER).toBe(sandbox!.env.SANDBOX_WEBHOOK_SECURITY_HEADER);
    }
    // Only the API holds the merchant and operator keys (as in docker-compose.yml).
    expect(worker!.env).not.toHaveProperty('MERCHANT_API_KEYS');
    expect(api!.env.MERCHANT_API_KEYS).toBe(`shop:${'m'.repeat(48)}`);
    // docker-compose.yml's stop_grace_period: the API 20 s, the worker 15 s.
    expect([sandbox!.graceSeconds, api!.graceSeconds, worker!.graceSeconds]).toEqual([10, 20, 15]);
    expect(api!.health[0]).toEqual({ port: 3001, path: '/readyz' });
    expect(worker!.health.map((h) => h.path)).toEqual(['/readyz', '/healthz']);
  });

  it('writes env files of one line per variable, refusing a line break', () => {
    expect(envFile({ A: '1', B: 'Basic x y' })).toBe('A=1\nB=Basic x y\n');
    expect(() => envFile({ A: 'x\ny' })).toThrow(/A: a value with a line break/);
  });

  it("reads the image's healthcheck: node scripts/healthcheck.cjs in exec form", () => {
    expect(healthcheckProblem({ Test: ['CMD', 'node', 'scripts/healthcheck.cjs'], Retries: 3 })).toBeUndefined();
    expect(healthcheckProblem(undefined)).toMatch(/no HEALTHCHECK .*OCI format/);
    expect(healthcheckProblem({ Test: [] })).toMatch(/no HEALTHCHECK/);
    expect(healthcheckProblem({ Test: ['CMD-SHELL', 'curl -f localhost'] })).toMatch(/CMD-SHELL/);
    expect(healthcheckProblem({ Test: ['CMD', 'true'] })).toMatch(/runs true/);
  });

  it('judges a stop: exit 0 within the grace period; 137 is SIGKILL, 143 an unhandled SIGTERM', () => {
    expect(stopProblem({ exitCode: 0, ms: 5300, graceSeconds: 20 })).toBeUndefined();
    expect(stopProblem({ exitCode: 137, ms: 15_100, graceSeconds: 15 })).toMatch(/SIGKILL/);
    expect(stopProblem({ exitCode: 143, ms: 100, graceSeconds: 10 })).toMatch(/unhandled/);
    expect(stopProblem({ exitCode: 1, ms: 100, graceSeconds: 10 })).toMatch(/exit code 1/);
    expect(stopProblem({ exitCode: 0, ms: 10_500, graceSeconds: 10 })).toMatch(/more than its 10 s grace/);
  });

  it("summarises a process's shutdown log after the stop request, repeats folded", () => {
    const log = [
      JSON.stringify({ time: 900, msg: 'listening' }),
      'not json',
      JSON.stringify({ time: 1072, msg: 'shutting down' }),
      JSON.stringify({ time: 1080, msg: 'Worker state changed' }),
      JSON.stringify({ time: 1081, msg: 'Worker state changed' }),
      JSON.stringify({ time: 6076, msg: 'stopped' }),
    ].join('\n');
    expect(shutdownTimeline(log, 1000)).toBe(
      '+72 ms shutting down → +80 ms Worker state changed (×2) → +5076 ms stopped',
    );
    expect(shutdownTimeline(log, 7000)).toBe('(nothing logged)');
  });
});
