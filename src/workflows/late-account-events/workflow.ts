import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { readLateReportsSnapshot, SNAPSHOT_SCHEMA_VERSIONS } from '../snapshots';
import type { Activities } from '../../activities/types';
import {
  DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN,
  DEFAULT_LATE_REPORTS_IDLE_TIMEOUT,
  MAX_LATE_REPORT_KEYS_KEPT,
  lateAccountEventSignal,
  lateAccountEventsQuery,
  type LateAccountEventSignalInput,
  type LateAccountEventsInput,
  type LateAccountEventsState,
  type LateBankReport,
  type LateBankReportEvent,
} from '../../shared/consent-refresh';
import { lateReportKey, toLateReport, trimLateReports } from '../../shared/late-reports';
import { ConsentId } from '../../shared/search-attributes';
import { MERCHANT_CALLBACK_ACTIVITY_OPTIONS } from '../activity-options';

const merchant = (summary: string) => proxyActivities<Activities>({ ...MERCHANT_CALLBACK_ACTIVITY_OPTIONS, summary });

/**
 * Per-consent hand-off of late bank reports: accountEvents whose refresh had closed, was never known, or runs for
 * another task. Started or signalled by the receiver with signal-with-start (or started by a refresh workflow for
 * an event it could not take). Each (taskId, bankCode) is kept once and POSTed to the merchant as a
 * `consent.late-bank-report`, one at a time; the reports stay queryable (bounded) so the merchant client can
 * amend the consent's last refresh result and learn the consent's banks. Continues as new when its history grows,
 * and closes after `idleTimeout` without a report.
 */
export async function lateAccountEventsWorkflow(input: LateAccountEventsInput): Promise<LateAccountEventsState> {
  const { consentId, callbackUrl } = input;
  const idleTimeout = input.idleTimeout ?? DEFAULT_LATE_REPORTS_IDLE_TIMEOUT;
  const maxDeliveriesPerRun = Math.max(1, input.maxDeliveriesPerRun ?? DEFAULT_LATE_REPORTS_DELIVERIES_PER_RUN);
  const { workflowId } = workflowInfo();

  // --- State: the handler only records; the body delivers.
  // Read by this build's schema reader: any version it knows or a newer one (snapshots.ts).
  const carried = input.carried === undefined ? undefined : readLateReportsSnapshot(input.carried);
  let reports: LateBankReport[] = [...(carried?.reports ?? [])];
  const seen = new Set<string>(carried?.seenKeys ?? reports.map((r) => lateReportKey(r.taskId, r.bankCode)));
  let received = carried?.received ?? 0;
  let duplicates = carried?.duplicates ?? 0;
  let deliveriesThisRun = 0;
  const state = (): LateAccountEventsState => ({ consentId, reports: [...reports], received, duplicates });
  const nextPending = (): LateBankReport | undefined => reports.find((r) => r.delivery === 'pending');

  const receive = ({ event, reason }: LateAccountEventSignalInput): void => {
    received++;
    const key = lateReportKey(event.taskId, event.bankCode);
    if (seen.has(key)) {
      duplicates++;
      return;
    }
    seen.add(key);
    // Bounded memory: the oldest keys go first (a duplicate that old is delivered again, under the same key).
    if (seen.size > MAX_LATE_REPORT_KEYS_KEPT) seen.delete(seen.values().next().value!);
    // Workflow time: the time of the workflow task that recorded it.
    reports.push(toLateReport(event, reason, new Date().toISOString(), callbackUrl ? 'pending' : 'kept'));
    reports = trimLateReports(reports);
    log.info('Late bank report recorded', { consentId, taskId: event.taskId, bankCode: event.bankCode, reason });
  };

  setHandler(lateAccountEventSignal, receive);
  setHandler(lateAccountEventsQuery, state);
  // The deploy procedure's nudge: its workflow task shows a sleeping run the new version (versioning.ts).
  setHandler(upgradeCheckSignal, () => undefined);
  for (const handedOff of input.handedOff ?? []) receive(handedOff);

  if (!workflowInfo().typedSearchAttributes.get(ConsentId))
    upsertSearchAttributes([{ key: ConsentId, value: consentId }]);

  const deliver = async (report: LateBankReport, url: string): Promise<void> => {
    const event: LateBankReportEvent = {
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
    try {
      await merchant(`POST late report of ${report.bankCode} (task ${report.taskId}) to the merchant`).notifyMerchant({
        merchantId: input.merchantId,
        url,
        // One key per report, in every run and chain: the merchant drops a redelivery.
        idempotencyKey: `${workflowId}:${report.taskId}:${report.bankCode}`,
        event: { ...event },
      });
      report.delivery = 'delivered';
      log.info('Late bank report delivered to the merchant', {
        consentId,
        taskId: report.taskId,
        bankCode: report.bankCode,
      });
    } catch (err) {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      // The merchant refused it (4xx) or stayed down past the retry budget: it stays queryable; go on with the next.
      report.delivery = 'failed';
      log.error('Late bank report not delivered', {
        consentId,
        taskId: report.taskId,
        bankCode: report.bankCode,
        error: err.cause?.message ?? err.message,
      });
    }
  };

  for (;;) {
    setCurrentDetails(details(state(), callbackUrl));
    const reason = continueAsNewReason(workflowInfo());
    if (deliveriesThisRun >= maxDeliveriesPerRun || reason !== undefined) {
      await condition(allHandlersFinished);
      log.info('Continuing as new', { consentId, received, reports: reports.length, reason: reason ?? 'deliveries' });
      // Onto the deployment's target version: a new build's run starts from this snapshot (continue-as-new.ts).
      await makeContinueAsNewFunc<typeof lateAccountEventsWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
        merchantId: input.merchantId,
        consentId,
        callbackUrl,
        idleTimeout: input.idleTimeout,
        maxDeliveriesPerRun: input.maxDeliveriesPerRun,
        carried: {
          schemaVersion: SNAPSHOT_SCHEMA_VERSIONS.lateAccountEvents,
          reports: trimLateReports(reports),
          seenKeys: [...seen],
          received,
          duplicates,
        },
      });
    }
    const report = nextPending();
    if (report === undefined || callbackUrl === undefined) {
      const before = received;
      const woke = await condition(
        () => nextPending() !== undefined || received !== before || newVersion(),
        idleTimeout,
      );
      // Checked again: a report recorded in the same activation as the idle timer is still delivered.
      if (!woke && nextPending() === undefined && received === before) break;
      continue;
    }
    await deliver(report, callbackUrl);
    deliveriesThisRun++;
    reports = trimLateReports(reports);
  }

  await condition(allHandlersFinished);
  log.info('Late bank reports idle: closing', { consentId, received, reports: reports.length });
  return state();
}

/** A new Current Version of the deployment: the run continues as new onto it at its next safe point. */
function newVersion(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged;
}

/** Current details for the Web UI: each kept report and its delivery. */
function details(s: LateAccountEventsState, callbackUrl: string | undefined): string {
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
