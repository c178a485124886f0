import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError, ENV_SHAPE, envSchema, READ_ELSEWHERE } from '../../src/config/schema';
import { envExample } from '../../src/config/env-example';

/** `.env.example` is generated from the schema's documentation (npm run docs:config) and must not drift from it. */
describe('.env.example', () => {
  const text = readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8');
  /** The variables it lists: `NAME=` or `# NAME=` at the start of a line. */
  const listed = new Set([...text.matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));

  it('is exactly what the schema generates (npm run docs:config rewrites it)', () => {
    expect(text).toBe(envExample());
  });

  it('fails on a drifted file: a changed value, a lost hint or a lost variable', () => {
    for (const drifted of [
      text.replace(/^PORT=3000$/m, 'PORT=8080'),
      text.replace(/^# pino level\.$/m, '# the log level.'),
      text.replace(/^# NODE_ENV=.*\n/m, ''),
    ]) {
      expect(drifted).not.toBe(text);
      expect(drifted).not.toBe(envExample());
    }
  });

  it('lists every variable of the schema, and those read beside it', () => {
    const missing = [...Object.keys(ENV_SHAPE), ...Object.keys(READ_ELSEWHERE)].filter((name) => !listed.has(name));
    expect(missing).toEqual([]);
  });

  it('gives each of them a hint: a comment line above it', () => {
    const lines = text.split('\n');
    const bare = [...listed].filter((name) => {
      const at = lines.findIndex((line) => new RegExp(`^(?:# )?${name}=`).test(line));
      let i = at - 1;
      while (i >= 0 && new RegExp(`^# ${name}=`).test(lines[i]!)) i--;
      return i < 0 || !lines[i]!.startsWith('#') || /^(?:# )?[A-Z][A-Z0-9_]*=/.test(lines[i]!);
    });
    expect(bare).toEqual([]);
  });

  it('sets only the schema’s defaults: copied to .env, it changes no setting', () => {
    const set = parseEnv(text);
    expect(Object.keys(set).sort()).toEqual(
      [
        'BANK_MAX_READS_PER_SECOND',
        'INTERNAL_PORT',
        'LOG_LEVEL',
        'PORT',
        'SANDBOX_PORT',
        'TASK_QUEUE',
        'TEMPORAL_DATA_DIR',
        'TEMPORAL_DEV_SERVER_PORT',
        'TEMPORAL_UI_CODEC_PORT',
        'TEMPORAL_UI_PORT',
        'WEBHOOK_SECURITY_HEADER',
        'WORKER_MAX_CONCURRENT_ACTIVITIES',
        'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS',
        'WORKER_METRICS_PORT',
        'WORKER_TUNER',
      ].sort(),
    );
    for (const role of ['all', 'api', 'worker'] as const) {
      expect(envSchema(role).parse(set)).toEqual(envSchema(role).parse({}));
    }
  });

  it('is where configuration errors send the reader, with docs/configuration.md', () => {
    expect(new ConfigError([{ variable: 'PORT', message: 'bad' }]).message).toMatch(
      /See \.env\.example and docs\/configuration\.md\.$/,
    );
  });
});
