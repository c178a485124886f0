import { spawnSync } from 'node:child_process';
import { executable } from '../../src/temporal/binaries';
import { join } from 'node:path';

/** The exposition format is read as the tools read it. */
export { parseExposition, sumOf, type Sample } from '../../tools/harness/exposition';

/** As the toolchain script finds promtool: PROMTOOL_PATH, .temporal/bin, then PATH; undefined when absent. */
export function findPromtool(): string | undefined {
  const candidates = [process.env.PROMTOOL_PATH, join(__dirname, '..', '..', '.temporal', 'bin', 'promtool')];
  for (const c of candidates) if (c && executable(c)) return c;
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : undefined;
}

/**
 * `it` for a test that needs promtool: skipped where promtool is missing, with one line saying how to get it
 * (`npm install` never installs it), and failing instead where PAYLATER_REQUIRE_TOOLS is set (.ci/run, after it
 * installed promtool).
 */
export function requirePromtool(what: string): jest.It {
  if (findPromtool() || process.env.PAYLATER_REQUIRE_TOOLS) return it;
  process.stderr.write(
    `promtool not found: ${what} skipped. Get it with \`npm run toolchain\` (a Go build into .temporal/bin) ` +
      'or apt-get install prometheus (Debian).\n',
  );
  return it.skip;
}
