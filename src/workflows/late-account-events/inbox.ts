import type { Duration } from '@temporalio/common';
import {
  DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN,
  DEFAULT_LATE_REPORTS_IDLE_TIMEOUT,
  MAX_LATE_REPORT_KEYS_KEPT,
  type LateAccountEventSignalInput,
  type LateAccountEventsInput,
  type LateAccountEventsState,
  type LateBankReport,
  type LateBankReportEvent,
} from '../../shared/consent-refresh';
import { lateReportKey, toLateReport, trimLateReports } from '../../shared/late-reports';
import { SNAPSHOT_SCHEMA_VERSIONS } from '../snapshots';

/**
 * The state and decisions of a consent's late bank reports, as plain code: the workflow registers the handler and
 * runs the delivery loop; this class keeps each (taskId, bankCode) once (bounded), says which report is next to
 * deliver, records how its delivery ended, and builds the merchant's event and the snapshot continue-as-new
 * carries. No Temporal API here, so it is unit-tested directly (test/workflows/late-account-events/inbox.test.ts);
 * time is passed in.
 */

export interface LateReportsSettings {
  idleTimeout: Duration;
  maxDeliveriesPerRun: number;
}

export function resolveLateReportsSettings(input: LateAccountEventsInput): LateReportsSettings {
  return {
    idleTimeout: input.idleTimeout ?? DEFAULT_LATE_REPORTS_IDLE_TIMEOUT,
    maxDeliveriesPerRun: Math.max(1, input.maxDeliveriesPerRun ?? DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN),
  };
}

type Carried = NonNullable<LateAccountEventsInput['carried']>;

export class LateReportInbox {
  private reports: LateBankReport[];
  private readonly seen: Set<string>;
  /** Late accountEvents received (all runs of the chain), duplicates included. */
  received: number;
  duplicates: number;
  deliveriesThisRun = 0;

  constructor(
    readonly consentId: string,
    /** Without one, reports are only kept (delivery `kept`). */
    private readonly callbackUrl: string | undefined,
    carried?: Carried,
  ) {
    this.reports = [...(carried?.reports ?? [])];
    this.seen = new Set<string>(carried?.seenKeys ?? this.reports.map((r) => lateReportKey(r.taskId, r.bankCode)));
    this.received = carried?.received ?? 0;
    this.duplicates = carried?.duplicates ?? 0;
  }

  /** The signal handler: a new (taskId, bankCode) becomes a report recorded at `nowMs`; a known one is counted. */
  receive({ event, reason }: LateAccountEventSignalInput, nowMs: number): 'recorded' | 'duplicate' {
    this.received++;
    const key = lateReportKey(event.taskId, event.bankCode);
    if (this.seen.has(key)) {
      this.duplicates++;
      return 'duplicate';
    }
    this.seen.add(key);
    // Bounded memory: the oldest keys go first (a duplicate that old is delivered again, under the same key).
    if (this.seen.size > MAX_LATE_REPORT_KEYS_KEPT) this.seen.delete(this.seen.values().next().value!);
    const delivery = this.callbackUrl ? 'pending' : 'kept';
    this.reports.push(toLateReport(event, reason, new Date(nowMs).toISOString(), delivery));
    this.reports = trimLateReports(this.reports);
    return 'recorded';
  }

  /** The oldest report still to be delivered. */
  nextPending(): LateBankReport | undefined {
    return this.reports.find((r) => r.delivery === 'pending');
  }

  get keptCount(): number {
    return this.reports.length;
  }

  /** A delivery ended: the report is delivered or failed (it stays queryable), and may now be trimmed. */
  settled(report: LateBankReport, delivery: 'delivered' | 'failed'): void {
    report.delivery = delivery;
    this.deliveriesThisRun++;
    this.reports = trimLateReports(this.reports);
  }

  state(): LateAccountEventsState {
    return {
      consentId: this.consentId,
      reports: [...this.reports],
      received: this.received,
      duplicates: this.duplicates,
    };
  }

  snapshot(): Carried {
    return {
      schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.lateAccountEvents,
      reports: trimLateReports(this.reports),
      seenKeys: [...this.seen],
      received: this.received,
      duplicates: this.duplicates,
    };
  }
}

/** The merchant callback's event for one report: the report without our delivery state. */
export function lateBankReportEvent(report: LateBankReport): LateBankReportEvent {
  return {
    type: 'consent.late-bank-report',
    consentId: report.consentId,
    taskId: report.taskId,
    bankCode: report.bankCode,
    bankName: report.bankName,
    taskStatus: report.taskStatus,
    succeeded: report.succeeded,
    accounts: report.accounts,
    at: report.at,
    reason: report.reason,
  };
}

/** One key per report, in every run and chain: the merchant drops a redelivery. */
export function lateReportIdempotencyKey(workflowId: string, report: LateBankReport): string {
  return `${workflowId}:${report.taskId}:${report.bankCode}`;
}

/** Current details for the Web UI: each kept report and its delivery. */
export function lateReportsDetails(s: LateAccountEventsState, callbackUrl: string | undefined): string {
  const lines = [
    `**Late bank reports** — consent \`${s.consentId}\`: ${s.received} received, ${s.duplicates} duplicate(s)` +
      (callbackUrl ? '' : ' (no merchant callback configured: kept only)'),
  ];
  for (const r of s.reports) {
    lines.push(
      `- ${r.bankCode} (${r.bankName}), task \`${r.taskId}\`: ${r.taskStatus}, ${r.accounts.length} account(s), ${r.reason}, ${r.delivery} — ${r.at}`,
    );
  }
  return lines.join('\n');
}
