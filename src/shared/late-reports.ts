import { TASK_STATUS_FINISHED, type AccountEventBody } from './bank-wire';
import {
  MAX_LATE_REPORT_ACCOUNTS_KEPT,
  MAX_LATE_REPORTS_KEPT,
  type BankRefreshResult,
  type ConsentRefreshProgress,
  type LateBankReport,
  type LateReportReason,
} from './consent-refresh';

/**
 * Decisions on late bank reports and learned bank sets, as plain functions: used by lateAccountEventsWorkflow
 * (deterministic: no clock, no I/O here) and by the merchant client (src/client/consent-refresh.ts).
 */

/** A report is one bank's answer to one refresh task: the deduplication key. */
export const lateReportKey = (taskId: string, bankCode: string): string => `${taskId}\u0000${bankCode}`;

/** An accountEvent as a late report, recorded at `at`. */
export function toLateReport(
  event: AccountEventBody,
  reason: LateReportReason,
  at: string,
  delivery: LateBankReport['delivery'],
): LateBankReport {
  return {
    consentId: event.consentId,
    taskId: event.taskId,
    bankCode: event.bankCode,
    bankName: event.bankName,
    taskStatus: event.taskStatus,
    succeeded: event.taskStatus === TASK_STATUS_FINISHED,
    accounts: event.accounts.map((a) => ({ accountId: a.accountId, eventType: a.eventType })),
    at,
    reason,
    delivery,
  };
}

/**
 * The reports to keep, oldest dropped first, within MAX_LATE_REPORTS_KEPT reports and MAX_LATE_REPORT_ACCOUNTS_KEPT
 * accounts; a report still to be delivered is never dropped (it leaves once delivered).
 */
export function trimLateReports(
  reports: readonly LateBankReport[],
  limits: { maxReports: number; maxAccounts: number } = {
    maxReports: MAX_LATE_REPORTS_KEPT,
    maxAccounts: MAX_LATE_REPORT_ACCOUNTS_KEPT,
  },
): LateBankReport[] {
  let count = reports.length;
  let accounts = reports.reduce((n, r) => n + r.accounts.length, 0);
  const kept: LateBankReport[] = [];
  for (const report of reports) {
    const over = count > limits.maxReports || accounts > limits.maxAccounts;
    if (over && report.delivery !== 'pending') {
      count--;
      accounts -= report.accounts.length;
      continue;
    }
    kept.push(report);
  }
  return kept;
}

/**
 * The latest refresh's progress amended by the late reports of its own taskId: each such bank (not already
 * reported on time) joins `banks` with `late: true` and its `at`, and leaves `missing`; `lateReports` counts them.
 * Reports of other tasks belong to earlier refreshes and are left out.
 */
export function mergeLateReports<P extends ConsentRefreshProgress>(
  progress: P,
  reports: readonly LateBankReport[],
): P & { lateReports: number } {
  const onTime = new Set(progress.banks.map((b) => b.bankCode));
  const late = new Map<string, BankRefreshResult>();
  for (const r of reports) {
    if (progress.taskId === undefined || r.taskId !== progress.taskId) continue;
    if (onTime.has(r.bankCode) || late.has(r.bankCode)) continue;
    late.set(r.bankCode, {
      bankCode: r.bankCode,
      bankName: r.bankName,
      taskStatus: r.taskStatus,
      succeeded: r.succeeded,
      accounts: r.accounts,
      at: r.at,
      late: true,
    });
  }
  return {
    ...progress,
    banks: [...progress.banks, ...late.values()],
    missing: progress.missing.filter((code) => !late.has(code)),
    lateReports: late.size,
  };
}

/**
 * The banks a new refresh of the consent should wait for when the merchant names none, from its latest closed
 * refresh (`previous`, absent when none is retained) and the consent's late reports:
 * - the banks that answered the latest refresh's task, on time or late;
 * - if none did (PUT /refresh failed, or no bank answered before the timeout nor since), the set that refresh was
 *   itself given, so one bad refresh does not forget what earlier ones learned;
 * - with no refresh retained, the banks of every kept late report.
 * A bank that did not answer the latest refresh at all while others did is not waited for next time (a bank
 * unlinked from the consent costs one refresh that runs to its timeout, not every refresh); it is learned again
 * as soon as it answers. Sorted, each once.
 */
export function learnedBankCodes(
  previous: ConsentRefreshProgress | undefined,
  lateReports: readonly LateBankReport[],
): string[] {
  const codes = new Set<string>();
  if (previous === undefined) {
    for (const r of lateReports) codes.add(r.bankCode);
  } else {
    for (const b of previous.banks) codes.add(b.bankCode);
    if (previous.taskId !== undefined)
      for (const r of lateReports) if (r.taskId === previous.taskId) codes.add(r.bankCode);
    if (codes.size === 0) for (const code of previous.knownBankCodes ?? []) codes.add(code);
  }
  return [...codes].sort();
}
