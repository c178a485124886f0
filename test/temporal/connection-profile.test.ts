import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { connectClient, connectWorker, TemporalNamespaceError } from '../../src/temporal/connection';
import { testDataConverter } from '../helpers/temporal';

/**
 * A Temporal CLI profile reaches the real server (the suite's dev server): the address and namespace come from the
 * profile through loadConfig, and the connection is made from them, as the entry points make it.
 */
const address = (): string => {
  const a = process.env.TEMPORAL_TEST_ADDRESS;
  if (!a) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run the tests through jest (global setup)');
  return a;
};

function profileEnv(namespace: string): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'paylater-conn-profile-'));
  const file = join(dir, 'temporal.toml');
  writeFileSync(file, `[profile.suite]\naddress = "${address()}"\nnamespace = "${namespace}"\n`);
  return { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'suite' };
}

const targetOf = (env: Record<string, string>) => {
  const config = loadConfig(env);
  return { address: config.temporal.address!, namespace: config.temporal.namespace, env: config.env };
};

describe('connections from a Temporal CLI profile', () => {
  it('connects the client and the worker to the address and namespace of the profile', async () => {
    const target = targetOf(profileEnv('default'));
    expect(target.address).toBe(address());
    const { client, connection } = await connectClient(target, { dataConverter: testDataConverter });
    try {
      expect(client.options.namespace).toBe('default');
      await client.workflowService.describeNamespace({ namespace: 'default' });
    } finally {
      await connection.close();
    }
    const worker = await connectWorker(target);
    await worker.close();
  });

  it("asks the server for the profile's namespace (not our default): an unknown one is refused at once", async () => {
    const target = targetOf(profileEnv('paylater-no-such-namespace'));
    expect(target.namespace).toBe('paylater-no-such-namespace');
    await expect(connectWorker(target)).rejects.toThrow(TemporalNamespaceError);
    await expect(connectClient(target, { dataConverter: testDataConverter })).rejects.toThrow(
      /paylater-no-such-namespace/,
    );
  });
});
