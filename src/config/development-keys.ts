import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { generateApiKey } from '../security/api-keys';
import { ConfigError } from './schema';

/**
 * The embedded stack's development keys (MERCHANT_API_KEYS or OPERATOR_API_KEYS unset under `npm start`), made once
 * and kept in the data folder, so a merchant's test setup and the Temporal CLI (`npm run temporal`) keep working
 * across restarts: `<TEMPORAL_DATA_DIR>/development-keys.json`, readable by the owner only (0600, the folder 0700,
 * like the dev server's and the sandbox's state beside it). Removing the file makes new keys at the next start.
 */
export interface DevelopmentKeys {
  merchant: string;
  operator: string;
  /** The file they are kept in (absolute). */
  file: string;
}

export const DEVELOPMENT_KEYS_FILE = 'development-keys.json';

/** The keys kept in `dataDir` (relative to `root`), made and written there the first time. */
export function persistedDevelopmentKeys(dataDir: string, root: string): DevelopmentKeys {
  const dir = isAbsolute(dataDir) ? dataDir : join(root, dataDir);
  const file = join(dir, DEVELOPMENT_KEYS_FILE);
  const problem = (message: string) =>
    new ConfigError([{ variable: 'TEMPORAL_DATA_DIR', message: `${file}: ${message}` }]);
  let kept: Partial<Record<'merchant' | 'operator', unknown>> = {};
  try {
    kept = JSON.parse(readFileSync(file, 'utf8')) as typeof kept;
    // A file made looser by hand (a copy, an editor) is made owner-only again: it holds keys.
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') {
      throw problem(
        err instanceof SyntaxError
          ? 'is not JSON; remove it to make new development keys'
          : `cannot be read (${code ?? (err as Error).message})`,
      );
    }
  }
  const valid = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9_-]{32,}$/.test(v);
  const keys = {
    merchant: valid(kept.merchant) ? kept.merchant : generateApiKey(),
    operator: valid(kept.operator) ? kept.operator : generateApiKey(),
  };
  if (keys.merchant !== kept.merchant || keys.operator !== kept.operator) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Written whole, then renamed: a start interrupted halfway never leaves half a file.
      const partial = `${file}.${process.pid}.tmp`;
      writeFileSync(partial, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
      renameSync(partial, file);
    } catch (err) {
      throw problem(`cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
  return { ...keys, file };
}
