import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  commandFor,
  isSupportedNode,
  supportedNodeRange,
  unsupportedNodeMessage,
} from '../../src/entry/supported-node';
import { sharedBuild } from '../helpers/build';

/**
 * An unsupported Node is named, not crashed on: every entry point checks process.version before any dependency
 * loads and exits with one line (docs/decisions/0044-pinned-node-for-npm-scripts.md).
 */
const root = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };

describe('the supported Node lines', () => {
  it('are package.json engines', () => {
    expect(supportedNodeRange()).toBe(pkg.engines.node);
  });

  it.each([
    ['v22.19.0', true],
    ['v22.23.3', true],
    ['v24.0.0', true],
    ['v24.21.0', true],
    ['v26.12.1', true],
    ['v22.18.9', false],
    ['v20.20.2', false],
    ['v23.11.0', false],
    ['v25.1.0', false],
    ['v27.0.0', false],
    ['nonsense', false],
  ])('%s supported: %s', (version, supported) => {
    expect(isSupportedNode(version)).toBe(supported);
  });

  it('the message names the running version, the range and the npm script of the entry', () => {
    const line = unsupportedNodeMessage('v20.20.2', 'worker');
    expect(line).not.toContain('\n');
    expect(line).toContain('v20.20.2');
    expect(line).toContain(pkg.engines.node);
    expect(line).toContain('`npm run worker`');
    expect(commandFor('main')).toBe('npm start');
    expect(commandFor('api/server')).toBe('npm run api');
    expect(commandFor('sandbox/server')).toBe('npm run sandbox');
  });
});

describe('an entry point under an unsupported Node', () => {
  let dist: string;
  let fakeNode20: string;
  beforeAll(async () => {
    dist = await sharedBuild();
    // Node 20 as the entry sees it: process.version set before the entry's first line runs (--require).
    fakeNode20 = join(mkdtempSync(join(tmpdir(), 'paylater-node20-')), 'fake-node-20.js');
    writeFileSync(fakeNode20, "Object.defineProperty(process, 'version', { value: 'v20.20.2' });\n");
  });

  it.each([
    ['main.js', 'npm start'],
    ['worker.js', 'npm run worker'],
    ['api/server.js', 'npm run api'],
    ['sandbox/server.js', 'npm run sandbox'],
  ])('%s prints one line and exits 1, loading nothing else', (entry, command) => {
    const run = spawnSync(process.execPath, ['--require', fakeNode20, join(dist, entry)], {
      encoding: 'utf8',
      env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:9' },
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toEqual([unsupportedNodeMessage('v20.20.2', entry.replace(/\.js$/, ''))]);
    expect(run.stderr).toContain(command);
  });

  // The machine's own node, where it is an unsupported one (Node 20 on the machines CI runs on).
  const machineNode = spawnSync('sh', ['-c', 'command -v /usr/bin/node'], { encoding: 'utf8' }).stdout.trim();
  const machineVersion = machineNode ? spawnSync(machineNode, ['--version'], { encoding: 'utf8' }).stdout.trim() : '';
  const onUnsupported = machineVersion && !isSupportedNode(machineVersion) ? it : it.skip;
  onUnsupported(`the machine's ${machineVersion || 'node'} runs dist/main.js to the one line`, () => {
    const run = spawnSync(machineNode, [join(dist, 'main.js')], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(unsupportedNodeMessage(machineVersion, 'main'));
  });
});
