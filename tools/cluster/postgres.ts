import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManagedProcess, sleep } from '../harness/processes';

/**
 * A throwaway PostgreSQL cluster for one run: `initdb` in a temp folder, the postmaster on 127.0.0.1:`port` with
 * password (scram) authentication, like a real deployment. PostgreSQL refuses to run as root: as root every
 * command runs as the `postgres` user (the Debian package creates it) through `setpriv`, which execs in place,
 * so the pid we hold is the postmaster's own and a signal reaches it.
 */
export interface PostgresOptions {
  binDir: string;
  port: number;
  user: string;
  password: string;
  logFile: string;
}

export interface Postgres {
  host: string;
  port: number;
  user: string;
  password: string;
  dataDir: string;
  process: ManagedProcess;
  /** Stops the postmaster (fast shutdown, then SIGKILL) and removes the temp folder. */
  stop(): Promise<void>;
}

const OS_USER = 'postgres';

/** Arguments prefix that runs a command as the postgres user when we are root (else nothing). */
function asPostgresUser(): { command?: string; prefix: string[]; uid?: number; gid?: number } {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return { prefix: [] };
  const id = (flag: string) => spawnSync('id', [flag, OS_USER], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error(
      `running as root, and PostgreSQL refuses root: a "${OS_USER}" user is needed ` +
        '(the Debian postgresql package creates it), or run as another user',
    );
  }
  return {
    command: 'setpriv',
    prefix: [`--reuid=${OS_USER}`, `--regid=${OS_USER}`, '--init-groups', '--'],
    uid: Number(uid.stdout.trim()),
    gid: Number(gid.stdout.trim()),
  };
}

function check(result: SpawnSyncReturns<string>, what: string): void {
  if (result.status !== 0) {
    throw new Error(`${what} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
  }
}

export async function startPostgres(o: PostgresOptions): Promise<Postgres> {
  const as = asPostgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'paylater-cluster-pg-'));
  const dataDir = join(dir, 'data');
  const pwFile = join(dir, 'pw');
  writeFileSync(pwFile, `${o.password}\n`, { mode: 0o600 });
  if (as.uid !== undefined) {
    chownSync(dir, as.uid, as.gid!);
    chownSync(pwFile, as.uid, as.gid!);
  }
  const cmd = (bin: string, args: string[]): [string, string[]] =>
    as.command ? [as.command, [...as.prefix, join(o.binDir, bin), ...args]] : [join(o.binDir, bin), args];

  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const [initdb, initArgs] = cmd('initdb', [
      '-D',
      dataDir,
      '-U',
      o.user,
      `--pwfile=${pwFile}`,
      '--auth=scram-sha-256',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-instructions',
    ]);
    check(spawnSync(initdb, initArgs, { encoding: 'utf8' }), 'initdb');
  } catch (err) {
    cleanup();
    throw err;
  }

  const [postgres, args] = cmd('postgres', [
    '-D',
    dataDir,
    '-p',
    String(o.port),
    '-k',
    dir, // the Unix socket stays in the temp folder
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'max_connections=300', // four Temporal services, each with its persistence and visibility pools
    '-c',
    'fsync=off', // a throwaway cluster: durability across a machine crash is not what is tested
  ]);
  const proc = new ManagedProcess('postgres', postgres, args, { PATH: process.env.PATH ?? '' }, o.logFile, dir);
  // The run's exit handler SIGKILLs what is left; the folder must go too, also after a failure or Ctrl-C.
  process.once('exit', cleanup);
  proc.start();

  const [isReady, readyArgs] = cmd('pg_isready', ['-h', '127.0.0.1', '-p', String(o.port), '-U', o.user]);
  const deadline = Date.now() + 60_000;
  while (spawnSync(isReady, readyArgs).status !== 0) {
    if (!proc.running || Date.now() > deadline) {
      await proc.stop(1_000);
      cleanup();
      throw new Error(`PostgreSQL did not accept connections on port ${o.port}; see ${o.logFile}`);
    }
    await sleep(200);
  }
  return {
    host: '127.0.0.1',
    port: o.port,
    user: o.user,
    password: o.password,
    dataDir,
    process: proc,
    async stop() {
      // SIGINT: PostgreSQL's fast shutdown (rolls back open transactions, closes connections).
      await proc.kill('SIGINT', 10_000);
      cleanup();
    },
  };
}
