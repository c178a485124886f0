import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { findTemporalCli, MISSING_BINARY_HELP } from '../../src/temporal/binaries';
import { spawn } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../../src/shared/search-attributes';
import { startDevServer } from '../../src/temporal/dev-server';
import { devServerArgs } from '../../src/temporal/dev-server-process';
import { eventually } from '../helpers/temporal';
import { freeLoopbackPort as freePort } from '../../src/temporal/free-port';

/** The embedded dev server's Web UI is pointed at the codec endpoint when one is given. */
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

  it('registers the search attributes an older data folder lacks when it starts on it', async () => {
    const cliPath = findTemporalCli();
    if (!cliPath) throw new Error(`No Temporal CLI. ${MISSING_BINARY_HELP}`);
    const dataDir = mkdtempSync(join(tmpdir(), 'paylater-devserver-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    const address = `127.0.0.1:${port}`;
    try {
      // An earlier version's server: the same SQLite file, one search attribute only.
      const old = spawn(cliPath, [
        ...devServerArgs({ port, uiPort, namespace: 'default', dbFile: join(dataDir, 'temporal.db') }).filter(
          (arg, i, args) => !(arg.startsWith('FinanceApplication') || args[i + 1]?.startsWith('FinanceApplication')),
        ),
      ]);
      const exited = new Promise((resolve) => old.once('exit', resolve));
      const before = await eventually(async () => {
        const connection = await Connection.connect({ address, connectTimeout: 1000 });
        try {
          return (await connection.operatorService.listSearchAttributes({ namespace: 'default' })).customAttributes;
        } finally {
          await connection.close();
        }
      });
      expect(Object.keys(before ?? {})).not.toContain('FinanceApplicationCreatedAt');
      old.kill('SIGTERM');
      await exited;

      // Fresh ports for the second start: what carries over is the data folder, and a port freed a moment ago may
      // already be another test's outgoing connection (CI once failed here with "address already in use").
      const [newPort, newUiPort] = [await freePort(), await freePort()];
      const dev = await startDevServer({
        cliPath,
        port: newPort,
        uiPort: newUiPort,
        dataDir,
        cwd: dataDir,
        namespace: 'default',
        logger: pino({ level: 'silent' }),
      });
      try {
        const connection = await Connection.connect({ address: `127.0.0.1:${newPort}` });
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
        await connection.close();
        expect(Object.keys(customAttributes ?? {})).toEqual(
          expect.arrayContaining([...SEARCH_ATTRIBUTE_NAMES, ...DATETIME_SEARCH_ATTRIBUTE_NAMES]),
        );
      } finally {
        await dev.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
