import { execFileSync } from 'node:child_process';

/** The direct children of a process (pgrep -P), none when it has none or is gone. */
export function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Every descendant of a process, children before their own children. */
export function descendants(pid: number): number[] {
  return childPids(pid).flatMap((child) => [child, ...descendants(child)]);
}

export interface ProcessRow {
  pid: number;
  ppid: number;
  /** Its process group. */
  pgid: number;
  /** ps's STAT: `Z…` for a zombie (ended, not yet reaped: it holds no port nor file). */
  stat: string;
  args: string;
}

/** Every process of the machine (`ps -eo pid,ppid,pgid,stat,args`). */
export function processTable(): ProcessRow[] {
  return execFileSync('ps', ['-eo', 'pid=,ppid=,pgid=,stat=,args='], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), pgid: Number(m[3]), stat: m[4]!, args: m[5]! }));
}

/** The processes of `table` below `pid` (not `pid` itself), children before their own children. */
export function subtree(table: ProcessRow[], pid: number): ProcessRow[] {
  return table.filter((row) => row.ppid === pid).flatMap((child) => [child, ...subtree(table, child.pid)]);
}
