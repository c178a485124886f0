import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { usableCacheDir } from '../../src/entry/compile-cache';

/** npm start's compile cache folder (src/entry/compile-cache.ts): used only when it is safe; never fails a start. */
describe('the compile cache folder', () => {
  const base = mkdtempSync(join(tmpdir(), 'paylater-compile-cache-test-'));
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('is created owner-only, and used again when it is there', () => {
    const dir = join(base, 'fresh');
    expect(usableCacheDir(dir)).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(usableCacheDir(dir)).toBe(true);
  });

  it('is refused when others may write into it (they could plant compiled code)', () => {
    const dir = join(base, 'shared');
    expect(usableCacheDir(dir)).toBe(true);
    chmodSync(dir, 0o777);
    expect(usableCacheDir(dir)).toBe(false);
  });

  it('is refused, without throwing, when it cannot be created or is not a folder', () => {
    const file = join(base, 'a-file');
    writeFileSync(file, '');
    expect(usableCacheDir(file)).toBe(false);
    expect(usableCacheDir(join(file, 'below'))).toBe(false);
    expect(usableCacheDir(join(base, 'missing-parent', 'cache'))).toBe(false);
  });
});
