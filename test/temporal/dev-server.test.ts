import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { findTemporalCli, MISSING_BINARY_HELP } from '../../src/temporal/binaries';
import { devServerArgs, startDevServer } from '../../src/temporal/dev-server';
import { eventually } from '../helpers/temporal';

/** The embedded dev server's Web UI is pointed at the codec endpoint when one is given. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.once('error', reject);
  });
}

describe('the embedded dev server and the codec endpoint', () => {
  it('passes --ui-codec-endpoint only when an endpoint is given', () => {
    const base = { port: 7233, uiPort: 8233, namespace: 'default' };
    const args = devServerArgs({ ...base, uiCodecEndpoint: 'http://localhost:3001/codec' });
    const at = args.indexOf('--ui-codec-endpoint');
    expect(args.slice(at, at + 2)).toEqual(['--ui-codec-endpoint', 'http://localhost:3001/codec']);
    expect(devServerArgs(base)).not.toContain('--ui-codec-endpoint');
  });

  it('starts the real server with it: the Web UI reports the endpoint in its settings', async () => {
    const cliPath = findTemporalCli();
    if (!cliPath) throw new Error(`No Temporal CLI. ${MISSING_BINARY_HELP}`);
    const dataDir = mkdtempSync(join(tmpdir(), 'paylater-devserver-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const dev = await startDevServer({
      cliPath,
      port,
      uiPort,
      dataDir,
      cwd: dataDir,
      namespace: 'default',
      logger: pino({ level: 'silent' }),
      uiCodecEndpoint: 'http://localhost:3001/codec',
    });
    try {
      // The UI may answer a moment after the frontend (startDevServer waits for the latter).
      const settings = await eventually(async () => {
        const res = await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`);
        return res.ok ? ((await res.json()) as { Codec: { Endpoint: string } }) : undefined;
      });
      expect(settings.Codec.Endpoint).toBe('http://localhost:3001/codec');
    } finally {
      await dev.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
