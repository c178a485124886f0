import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * The image's HEALTHCHECK (scripts/healthcheck.cjs): one script for the three processes the image runs, which finds
 * the one running and probes its route on the port its variables set. `npm run test:image` runs it in each container.
 */
const root = join(__dirname, '..', '..');
const script = join(root, 'scripts', 'healthcheck.cjs');
const load = createRequire(__filename);
const healthcheck = load(script) as {
  processOf(args: string[]): string | undefined;
  detectProcess(cmdlines: string[][]): string | undefined;
  probeUrl(name: string, env: Record<string, string | undefined>): { url?: string; error?: string };
};

describe('scripts/healthcheck.cjs', () => {
  it('tells the process from its command line (compose and the Dockerfile run node dist/...)', () => {
    expect(healthcheck.processOf(['node', 'dist/worker.js'])).toBe('worker');
    expect(healthcheck.processOf(['node', 'dist/api/server.js'])).toBe('api');
    expect(healthcheck.processOf(['node', './dist/sandbox/server.js'])).toBe('sandbox');
    expect(healthcheck.processOf(['/usr/local/bin/node', '/app/dist/main.js'])).toBe('main');
    expect(healthcheck.processOf(['node', 'scripts/healthcheck.cjs'])).toBeUndefined();
    expect(healthcheck.processOf([])).toBeUndefined();
  });

  it("takes PID 1's process, else the first other one that runs an entry point (PID 1 an init)", () => {
    expect(
      healthcheck.detectProcess([
        ['node', 'dist/worker.js'],
        ['node', 'dist/api/server.js'],
      ]),
    ).toBe('worker');
    expect(healthcheck.detectProcess([['/sbin/tini', '--', 'node', 'dist/api/server.js']])).toBe('api');
    expect(healthcheck.detectProcess([['/catatonit', '-P'], [], ['node', 'dist/sandbox/server.js']])).toBe('sandbox');
    expect(healthcheck.detectProcess([['bash'], ['sleep', '1']])).toBeUndefined();
  });

  it("probes each process's route on the port its variables set, defaults as the processes have them", () => {
    expect(healthcheck.probeUrl('worker', {})).toEqual({ url: 'http://127.0.0.1:9464/readyz' });
    expect(healthcheck.probeUrl('api', {})).toEqual({ url: 'http://127.0.0.1:3001/readyz' });
    expect(healthcheck.probeUrl('main', {})).toEqual({ url: 'http://127.0.0.1:3001/readyz' });
    expect(healthcheck.probeUrl('sandbox', {})).toEqual({ url: 'http://127.0.0.1:4010/_sandbox' });
    expect(healthcheck.probeUrl('worker', { WORKER_METRICS_PORT: '9500' })).toEqual({
      url: 'http://127.0.0.1:9500/readyz',
    });
    expect(healthcheck.probeUrl('api', { INTERNAL_PORT: '4001', PORT: '4000' })).toEqual({
      url: 'http://127.0.0.1:4001/readyz',
    });
    // compose's sandbox listens on every interface: probed on the loopback; a set address is probed there.
    expect(healthcheck.probeUrl('sandbox', { SANDBOX_HOST: '0.0.0.0', SANDBOX_PORT: '4011' })).toEqual({
      url: 'http://127.0.0.1:4011/_sandbox',
    });
    expect(healthcheck.probeUrl('api', { INTERNAL_HOST: '10.1.2.3' })).toEqual({ url: 'http://10.1.2.3:3001/readyz' });
    expect(healthcheck.probeUrl('worker', { WORKER_METRICS_HOST: '::' }).url).toBe('http://127.0.0.1:9464/readyz');
    expect(healthcheck.probeUrl('worker', { WORKER_METRICS_HOST: 'fd00::5' }).url).toBe('http://[fd00::5]:9464/readyz');
  });

  it('refuses what it cannot probe: a port picked at start (0), a bad port, an unknown process', () => {
    expect(healthcheck.probeUrl('worker', { WORKER_METRICS_PORT: '0' }).error).toMatch(/WORKER_METRICS_PORT=0/);
    expect(healthcheck.probeUrl('api', { INTERNAL_PORT: 'x' }).error).toMatch(/INTERNAL_PORT=x/);
    expect(healthcheck.probeUrl('cron', {}).error).toMatch(/unknown process/);
  });

  it('exits 1 with a message when nothing answers (a named process, an unused port)', () => {
    const result = spawnSync(process.execPath, [script, 'sandbox'], {
      env: { PATH: process.env.PATH, SANDBOX_PORT: '1' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^healthcheck: /);
  });

  it("is the Dockerfile's HEALTHCHECK, copied into the image (exec form: no shell needed)", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const lastStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(lastStage).toMatch(/^COPY .*scripts\/healthcheck\.cjs.* \.\/scripts\/$/m);
    const checks = [...lastStage.matchAll(/^HEALTHCHECK (.*)$/gm)].map((m) => m[1]!);
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatch(/CMD \["node", "scripts\/healthcheck\.cjs"\]$/);
  });
});
