import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The published client (packages/client/dist, built by scripts/build-client.mjs) reaches the Temporal SDK through
 * its public entry points only: no `@temporalio/<package>/lib/...` in its JavaScript nor in its declarations, whose
 * inferred types would otherwise name the SDK's internals (src/shared/search-attributes.ts writes its keys' types out).
 */
const ROOT = join(__dirname, '..', '..');
const DIST = join(ROOT, 'packages', 'client', 'dist');
const DEEP = /@temporalio\/[a-z-]+\/lib\b/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

describe('the published client', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-client.mjs')], { cwd: ROOT, stdio: 'pipe' });
  }, 120_000);

  it('imports no @temporalio/*/lib internals, in its JavaScript or its declarations', () => {
    const built = files(DIST).filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'));
    expect(built.length).toBeGreaterThan(10);
    const deep = built.filter((f) => DEEP.test(readFileSync(f, 'utf8'))).map((f) => f.slice(DIST.length + 1));
    expect(deep).toEqual([]);
  });

  it('would be caught: the pattern matches a deep import and spares a public one', () => {
    expect(DEEP.test(`require("@temporalio/common/lib/time")`)).toBe(true);
    expect(DEEP.test(`import("@temporalio/common/lib/search-attributes").SearchAttributeKey`)).toBe(true);
    expect(DEEP.test(`require("@temporalio/common")`)).toBe(false);
  });
});
