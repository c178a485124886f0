import type { ConsentRefreshProgress } from '../../shared/consent-refresh';

/** Current details for the Web UI: which banks reported (and how), which are still missing. */
export function refreshDetails(p: ConsentRefreshProgress, headline: string): string {
  const lines = [`**${headline}** — consent \`${p.consentId}\`${p.taskId ? `, task \`${p.taskId}\`` : ''}`];
  for (const b of p.banks) {
    lines.push(
      `- ${b.succeeded ? '✅' : '❌'} ${b.bankCode} (${b.bankName}): ${b.taskStatus}, ${b.accounts.length} account(s) at ${b.at}`,
    );
  }
  if (p.missing.length > 0)
    lines.push(
      `- ⏳ not reported: ${p.missing.join(', ')}${p.expectedBankCodes ? '' : ' (learned from earlier refreshes)'}`,
    );
  if (p.handedOffEvents) lines.push(`- ↪ handed to the consent's late bank reports: ${p.handedOffEvents}`);
  if (p.staleEvents || p.duplicateEvents)
    lines.push(`- ignored: ${p.staleEvents} stale, ${p.duplicateEvents} duplicate`);
  return lines.join('\n');
}
