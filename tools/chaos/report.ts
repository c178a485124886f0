import type { Row, SeedResult } from './scenario';
import type { Category } from './truth';

/** Printing of a chaos run: a table per seed, its findings, and the summary over seeds. */

export function formatTable(rows: Row[]): string {
  const header: Row = ['figure', 'value', 'bound / target'];
  const all = [header, ...rows];
  const widths = [0, 1].map((i) => Math.max(...all.map((r) => r[i]!.length)));
  return all
    .map((row) => `  ${row[0].padEnd(widths[0]!)}  ${row[1].padEnd(widths[1]!)}  ${row[2]}`.trimEnd())
    .join('\n');
}

const LABEL: Record<Category, string> = { lost: 'LOST', wrong: 'WRONG', ackLost: 'ACK-LOST' };

/** The findings, at most `limit` lines (the run folder's result.json has them all). */
export function formatFindings(result: SeedResult, limit = 40): string {
  if (result.findings.length === 0) return '  findings: none';
  const lines = result.findings.slice(0, limit).map((f) => `  ${LABEL[f.category].padEnd(8)} ${f.subject}: ${f.what}`);
  if (result.findings.length > limit) {
    lines.push(`  … ${result.findings.length - limit} more in ${result.runDir}/result.json`);
  }
  return `  findings:\n${lines.join('\n')}`;
}

export function formatSummary(results: SeedResult[], command: string): string {
  const lines = [`summary (${command}):`, '  seed  lost  wrong  ack-lost  time'];
  const total: Record<Category, number> = { lost: 0, wrong: 0, ackLost: 0 };
  for (const r of results) {
    lines.push(
      `  ${String(r.seed).padEnd(4)}  ${String(r.counts.lost).padEnd(4)}  ${String(r.counts.wrong).padEnd(5)}  ` +
        `${String(r.counts.ackLost).padEnd(8)}  ${(r.elapsedMs / 1000).toFixed(0)} s`,
    );
    for (const k of Object.keys(total) as Category[]) total[k] += r.counts[k];
  }
  lines.push(
    `  all   ${String(total.lost).padEnd(4)}  ${String(total.wrong).padEnd(5)}  ${String(total.ackLost).padEnd(8)}`,
  );
  return lines.join('\n');
}
