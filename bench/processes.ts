import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export { freeLoopbackPort as freePort } from '../src/free-port';

/** What the benches read of the processes they start (Linux /proc), and a free loopback port. */

/** Resident memory of a process (MiB). */
export function rssMiB(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User + system CPU time of a process, in seconds (/proc/<pid>/stat utime and stime, fields 14 and 15). */
export function cpuSeconds(pid: number): number {
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}
