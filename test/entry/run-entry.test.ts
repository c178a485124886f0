import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedBuild } from '../helpers/build';

/**
 * The frame of every entry point (src/entry/run-entry.ts) and what it does with a defect no code handled: a promise
 * rejected with no handler, or an uncaught throw. A probe entry, compiled as the real ones are, runs it in a process.
 */
let dir: string;
let probe: string;
beforeAll(async () => {
  const dist = await sharedBuild();
  dir = mkdtempSync(join(tmpdir(), 'paylater-run-entry-'));
  probe = join(dir, 'probe.js');
  writeFileSync(
    probe,
    `const { runEntry } = require(${JSON.stringify(join(dist, 'entry', 'run-entry.js'))});
const mode = process.argv[2];
const config = {
  logLevel: 'info',
  logFormat: 'json',
  tracing: undefined,
  temporal: { address: '127.0.0.1:9', namespace: 'default', connection: { addressFrom: 'TEMPORAL_ADDRESS', tls: false } },
  payloadEncryption: { developmentKey: false },
};
runEntry('probe', async ({ onShutdown }) => {
  onShutdown(async () => {
    if (mode === 'while-stopping') Promise.reject(new Error('a late defect'));
    await new Promise((r) => setTimeout(r, 100));
  });
  if (mode === 'rejection') setTimeout(() => Promise.reject(new Error('a forgotten promise')), 50);
  if (mode === 'throw') setTimeout(() => { throw new Error('an uncaught throw'); }, 50);
  process.stdout.write('READY\\n');
}, { load: () => config });
`,
  );
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Line {
  level: number;
  msg: string;
  err?: { message: string };
}

function runProbe(mode: string, signal?: NodeJS.Signals): Promise<{ code: number | null; lines: Line[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [probe, mode], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '' } });
    let out = '';
    let signalled = false;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (signal && !signalled && out.includes('READY\n')) signalled = child.kill(signal);
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Line);
      resolve({ code, lines });
    });
  });
}

describe('an entry point meeting a defect no code handled', () => {
  it('logs an unhandled rejection as fatal, with the error, and exits 1 through the graceful path', async () => {
    const { code, lines } = await runProbe('rejection');
    expect(code).toBe(1);
    const fatal = lines.find((l) => l.msg === 'unhandled promise rejection');
    expect(fatal).toMatchObject({ level: 60, err: { message: 'a forgotten promise' } });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
  });

  it('does the same with an uncaught throw', async () => {
    const { code, lines } = await runProbe('throw');
    expect(code).toBe(1);
    expect(lines.find((l) => l.msg === 'uncaught exception')).toMatchObject({
      level: 60,
      err: { message: 'an uncaught throw' },
    });
    expect(lines.map((l) => l.msg)).toContain('stopped');
  });

  it('during a requested shutdown, logs it as an error and keeps the exit code asked for', async () => {
    const { code, lines } = await runProbe('while-stopping', 'SIGTERM');
    expect(code).toBe(0);
    expect(lines.find((l) => l.msg === 'unhandled promise rejection while shutting down')).toMatchObject({
      level: 50,
      err: { message: 'a late defect' },
    });
    expect(lines.map((l) => l.msg)).toContain('stopped');
  });

  it('without a defect, a SIGTERM ends it with 0 and no error logged', async () => {
    const { code, lines } = await runProbe('clean', 'SIGTERM');
    expect(code).toBe(0);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });
});
