import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { persistedDevelopmentKeys } from '../../src/config/development-keys';
import { loadConfig } from '../../src/config/resolve';

/** The embedded stack's development keys, kept in the data folder (src/config/development-keys.ts). */
describe('development keys kept in the data folder', () => {
  const base = mkdtempSync(join(tmpdir(), 'paylater-dev-keys-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('are made once (file 0600, folder 0700) and the same at the next read', () => {
    const first = persistedDevelopmentKeys('data', base);
    expect(first.file).toBe(join(base, 'data', 'development-keys.json'));
    expect(statSync(first.file).mode & 0o777).toBe(0o600);
    expect(statSync(join(base, 'data')).mode & 0o777).toBe(0o700);
    expect(first.merchant).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.operator).not.toBe(first.merchant);
    expect(persistedDevelopmentKeys('data', base)).toEqual(first);
  });

  it('reach the configuration when the keys are unset, and not when they are set', () => {
    const dataDir = join(base, 'config');
    const load = (env: Record<string, string>) =>
      loadConfig(
        { TEMPORAL_DATA_DIR: dataDir, ...env },
        { developmentKeys: (dir) => persistedDevelopmentKeys(dir, base) },
      );
    const a = load({});
    const b = load({});
    expect(a.merchantApiKeys.keys[0]!.key).toBe(b.merchantApiKeys.keys[0]!.key);
    expect(a.operatorApiKeys.keys[0]!.key).toBe(b.operatorApiKeys.keys[0]!.key);
    expect(a.developmentKeysFile).toBe(join(dataDir, 'development-keys.json'));
    const chosen = load({
      MERCHANT_API_KEYS: 'shop:shop-key-0123456789abcdef',
      OPERATOR_API_KEYS: 'ops:ops-key-0123456789abcdef',
    });
    expect(chosen.developmentKeysFile).toBeUndefined();
    // Without the option (npm run api, tests): new keys each time, nothing written.
    expect(loadConfig({}).merchantApiKeys.keys[0]!.key).not.toBe(loadConfig({}).merchantApiKeys.keys[0]!.key);
  });

  it('a file made readable by others is made owner-only again; one that is not JSON is a clear configuration error', () => {
    const { file } = persistedDevelopmentKeys('loose', base);
    chmodSync(file, 0o644);
    persistedDevelopmentKeys('loose', base);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    writeFileSync(file, 'not json');
    expect(() => persistedDevelopmentKeys('loose', base)).toThrow(/TEMPORAL_DATA_DIR: .*is not JSON; remove it/);
    expect(readFileSync(file, 'utf8')).toBe('not json');
  });
});
