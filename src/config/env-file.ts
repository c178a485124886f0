import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

/** What reading the .env file did (names only: values are never kept or logged). */
export interface EnvFileResult {
  /** Absolute path of the file read; undefined when there was none. */
  path?: string;
  /** Variables taken from the file. */
  applied: string[];
  /** Variables in the file that the environment already set (the environment wins). */
  overridden: string[];
}

/**
 * Reads `path` (default `.env` in the working directory), as Node's `--env-file-if-exists` does: no file is not an
 * error, the file's syntax is Node's (util.parseEnv: `KEY=value`, `#` comments, quotes, `export` prefixes), and a
 * variable already in the environment wins, even when set to an empty value. An unreadable file throws.
 */
export function applyEnvFile(
  env: Record<string, string | undefined> = process.env,
  path = resolve('.env'),
): EnvFileResult {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { applied: [], overridden: [] };
    throw new Error(`cannot read ${path}: ${(err as Error).message}`);
  }
  const applied: string[] = [];
  const overridden: string[] = [];
  for (const [key, value] of Object.entries(parseEnv(text))) {
    if (env[key] !== undefined) overridden.push(key);
    else {
      env[key] = value;
      applied.push(key);
    }
  }
  return { path, applied, overridden };
}
