import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * PostgreSQL's server binaries for a throwaway cluster (tools/cluster/postgres.ts starts it), found as
 * scripts/temporal-toolchain.mjs finds them: POSTGRES_BIN_DIR, `pg_config --bindir`, then Debian's
 * /usr/lib/postgresql/<newest>/bin. Undefined when there are none.
 */
export function findPostgresBinDir(): string | undefined {
  const has = (dir: string | undefined): dir is string => {
    if (!dir) return false;
    try {
      accessSync(join(dir, 'initdb'), constants.X_OK);
      accessSync(join(dir, 'postgres'), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (has(process.env.POSTGRES_BIN_DIR)) return process.env.POSTGRES_BIN_DIR;
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (pgConfig.status === 0 && has(pgConfig.stdout.trim())) return pgConfig.stdout.trim();
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v) && has(join(debian, v, 'bin')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions.length ? join(debian, versions[0]!, 'bin') : undefined;
}

/**
 * `describe` for tests that need a real PostgreSQL: skipped with one line saying how to get it where its binaries are
 * missing, and failing instead where PAYLATER_REQUIRE_TOOLS is set (as test/helpers/prometheus.ts does for promtool).
 */
export function describeWithPostgres(what: string): jest.Describe {
  if (findPostgresBinDir() || process.env.PAYLATER_REQUIRE_TOOLS) return describe;
  process.stderr.write(
    `PostgreSQL not found: ${what} skipped. Install it (Debian: apt-get install postgresql) or set POSTGRES_BIN_DIR ` +
      'to the folder holding initdb and postgres.\n',
  );
  return describe.skip;
}
