import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { DATETIME_SEARCH_ATTRIBUTE_NAMES, SEARCH_ATTRIBUTE_NAMES } from '../../src/shared/search-attributes';
import { findTemporalCli } from '../../src/temporal/binaries';
import { connectTestTemporal, eventually, type TemporalTestContext } from '../helpers/temporal';

/**
 * deploy/temporal/setup.sh against the suite's real dev server (its `schema` step runs on PostgreSQL in
 * `npm run test:cluster`): `init` creates the namespace and the contract's search attributes, is idempotent,
 * and fails loudly — a conflicting attribute or an unreachable server is an exit code and a message, never a pass.
 */
const script = join(__dirname, '..', '..', 'deploy', 'temporal', 'setup.sh');
const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
const DATETIME = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME;
let t: TemporalTestContext;

beforeAll(async () => {
  t = await connectTestTemporal();
});
afterAll(() => t.close());

function setup(step: string, env: Record<string, string>) {
  return spawnSync('/bin/sh', [script, step], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TEMPORAL_CLI: findTemporalCli()!, ...env },
  });
}

/** A namespace as an operator would create it, and waited for until the frontend knows it. */
async function createNamespace(namespace: string) {
  const created = spawnSync(
    findTemporalCli()!,
    ['operator', 'namespace', 'create', '--address', t.address, '-n', namespace],
    {
      encoding: 'utf8',
    },
  );
  expect(created.stderr).toBe('');
  await eventually(() => t.connection.workflowService.describeNamespace({ namespace }));
}

async function customAttributes(namespace: string) {
  const listed = await t.connection.operatorService.listSearchAttributes({ namespace });
  return listed.customAttributes ?? {};
}

test('init creates the namespace and every search attribute, and a second run changes nothing', async () => {
  const namespace = `setup-sh-${randomUUID()}`;
  const first = setup('init', { TEMPORAL_ADDRESS: t.address, TEMPORAL_NAMESPACE: namespace });
  expect(first.stderr).toBe('');
  expect(first.status).toBe(0);
  expect(first.stdout).toContain(
    `created: ${[...SEARCH_ATTRIBUTE_NAMES, ...DATETIME_SEARCH_ATTRIBUTE_NAMES].join(' ')}`,
  );
  const custom = await customAttributes(namespace);
  for (const name of SEARCH_ATTRIBUTE_NAMES) expect(custom[name]).toBe(KEYWORD);
  for (const name of DATETIME_SEARCH_ATTRIBUTE_NAMES) expect(custom[name]).toBe(DATETIME);

  const again = setup('init', { TEMPORAL_ADDRESS: t.address, TEMPORAL_NAMESPACE: namespace });
  expect(again.status).toBe(0);
  expect(again.stdout).toContain('created: none');
});

test('init completes a namespace that has some of the attributes', async () => {
  const namespace = `setup-sh-${randomUUID()}`;
  await createNamespace(namespace);
  await t.connection.operatorService.addSearchAttributes({ namespace, searchAttributes: { ConsentId: KEYWORD } });
  const run = setup('init', { TEMPORAL_ADDRESS: t.address, TEMPORAL_NAMESPACE: namespace });
  expect(run.status).toBe(0);
  expect(run.stdout).not.toMatch(/created:.*ConsentId/);
  const custom = await customAttributes(namespace);
  for (const name of SEARCH_ATTRIBUTE_NAMES) expect(custom[name]).toBe(KEYWORD);
  for (const name of DATETIME_SEARCH_ATTRIBUTE_NAMES) expect(custom[name]).toBe(DATETIME);
});

test('init fails, naming it, when an attribute exists with another type', async () => {
  const namespace = `setup-sh-${randomUUID()}`;
  await createNamespace(namespace);
  await t.connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: { MerchantReference: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT },
  });
  const run = setup('init', { TEMPORAL_ADDRESS: t.address, TEMPORAL_NAMESPACE: namespace });
  expect(run.status).toBe(1);
  expect(run.stderr).toContain('search attribute MerchantReference exists with a type other than Keyword');
});

test('init fails when the server never becomes healthy', () => {
  const run = setup('init', { TEMPORAL_ADDRESS: '127.0.0.1:9', TEMPORAL_INIT_TIMEOUT_S: '1' });
  expect(run.status).toBe(1);
  expect(run.stderr).toContain('Temporal at 127.0.0.1:9 not healthy in time');
});

test('schema fails, naming TEMPORAL_SCHEMA_DIR, when the schema files are not there', () => {
  const run = setup('schema', {
    POSTGRES_SEEDS: '127.0.0.1',
    POSTGRES_USER: 'temporal',
    POSTGRES_PWD: 'temporal',
    TEMPORAL_SCHEMA_DIR: '/nonexistent',
  });
  expect(run.status).toBe(1);
  expect(run.stderr).toContain('set TEMPORAL_SCHEMA_DIR');
});

test('an unknown step is a usage error', () => {
  expect(setup('migrate', {}).status).toBe(2);
});
