import { spawnSync } from 'node:child_process';
import { executable } from '../../src/temporal/binaries';
import { join } from 'node:path';

/** One sample of the Prometheus text exposition format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the text exposition format (enough for tests: no escaped quotes inside label values). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Sum of a series' samples whose labels include `match`. */
export function sumOf(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

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
