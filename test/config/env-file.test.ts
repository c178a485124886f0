import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyEnvFile } from '../../src/config/env-file';

/** `.env` as every entry point reads it (src/entry/load-env-file.ts): the file fills gaps, the environment wins. */
describe('applyEnvFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'paylater-envfile-'));

  it('takes the variables the environment does not set, and keeps the ones it does (even when empty)', () => {
    const path = join(dir, 'a.env');
    writeFileSync(
      path,
      [
        '# a comment',
        'PORT=4000',
        'INTERNAL_PORT=4001',
        'LOG_LEVEL=debug',
        'export TASK_QUEUE=from-file',
        'WEBHOOK_SECURITY_HEADER="Basic a b="',
        'TEMPORAL_NAMESPACE=from-file',
        '',
      ].join('\n'),
    );
    const env: Record<string, string | undefined> = { PORT: '3000', TEMPORAL_NAMESPACE: '' };
    const result = applyEnvFile(env, path);
    expect(env).toEqual({
      PORT: '3000',
      TEMPORAL_NAMESPACE: '',
      INTERNAL_PORT: '4001',
      LOG_LEVEL: 'debug',
      TASK_QUEUE: 'from-file',
      WEBHOOK_SECURITY_HEADER: 'Basic a b=',
    });
    expect(result).toEqual({
      path,
      applied: ['INTERNAL_PORT', 'LOG_LEVEL', 'TASK_QUEUE', 'WEBHOOK_SECURITY_HEADER'],
      overridden: ['PORT', 'TEMPORAL_NAMESPACE'],
    });
  });

  it('does nothing when there is no file', () => {
    const env: Record<string, string | undefined> = { A: '1' };
    expect(applyEnvFile(env, join(dir, 'absent.env'))).toEqual({ applied: [], overridden: [] });
    expect(env).toEqual({ A: '1' });
  });

  it('throws, naming the file, when it cannot be read', () => {
    const notAFile = join(dir, 'a-directory.env');
    mkdirSync(notAFile);
    expect(() => applyEnvFile({}, notAFile)).toThrow(`cannot read ${notAFile}`);
  });
});
