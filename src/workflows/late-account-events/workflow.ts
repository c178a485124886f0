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
import type { Activities } from '../../activities/types';
import {
  lateAccountEventSignal,
  lateAccountEventsQuery,
  type LateAccountEventSignalInput,
  type LateAccountEventsInput,
  type LateAccountEventsState,
  type LateBankReport,
} from '../../shared/consent-refresh';
import { ConsentId } from '../../shared/search-attributes';
import { upgradeCheckSignal } from '../../shared/versioning';
import { MERCHANT_CALLBACK_ACTIVITY_OPTIONS } from '../activity-options';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { readLateReportsSnapshot } from '../snapshots';
import {
  LateReportInbox,
  lateBankReportEvent,
  lateReportIdempotencyKey,
  lateReportsDetails,
  resolveLateReportsSettings,
} from './inbox';

const merchant = (summary: string) => proxyActivities<Activities>({ ...MERCHANT_CALLBACK_ACTIVITY_OPTIONS, summary });

/**
 * Per-consent hand-off of late bank reports: accountEvents whose refresh had closed, was never known, or runs for
 * another task. Started or signalled by the receiver with signal-with-start (or started by a refresh workflow for
 * an event it could not take). Each (taskId, bankCode) is kept once and POSTed to the merchant as a
 * `consent.late-bank-report`, one at a time; the reports stay queryable (bounded) so the merchant client can
 * amend the consent's last refresh result and learn the consent's banks. Continues as new when its history grows,
 * and closes after `idleTimeout` without a report. The decisions are in inbox.ts.
 */
export async function lateAccountEventsWorkflow(input: LateAccountEventsInput): Promise<LateAccountEventsState> {
  const { consentId, callbackUrl } = input;
  const { idleTimeout, maxDeliveriesPerRun } = resolveLateReportsSettings(input);
  // Read by this build's schema reader: any version it knows or a newer one (snapshots.ts).
  const carried = input.carried === undefined ? undefined : readLateReportsSnapshot(input.carried);
  const inbox = new LateReportInbox(consentId, callbackUrl, carried);

  // --- Handlers first: they only record; the body delivers.
  const receive = (report: LateAccountEventSignalInput): void => {
    // Workflow time: the time of the workflow task that recorded it.
    if (inbox.receive(report, new Date().getTime()) === 'recorded')
      log.info('Late bank report recorded', {
        consentId,
        taskId: report.event.taskId,
        bankCode: report.event.bankCode,
        reason: report.reason,
      });
  };
  setHandler(lateAccountEventSignal, receive);
  setHandler(lateAccountEventsQuery, () => inbox.state());
  // The deploy procedure's nudge: its workflow task shows a sleeping run the new version (versioning.ts).
  setHandler(upgradeCheckSignal, () => undefined);
  // Reports a refresh handed over when it started this run.
  for (const handedOff of input.handedOff ?? []) receive(handedOff);

  if (!workflowInfo().typedSearchAttributes.get(ConsentId))
    upsertSearchAttributes([{ key: ConsentId, value: consentId }]);

  for (;;) {
    setCurrentDetails(lateReportsDetails(inbox.state(), callbackUrl));
    // --- Continue as new when the run has grown, or a new version waits.
    const reason = continueAsNewReason(workflowInfo());
    if (inbox.deliveriesThisRun >= maxDeliveriesPerRun || reason !== undefined) {
      await condition(allHandlersFinished);
      log.info('Continuing as new', {
        consentId,
        received: inbox.received,
        reports: inbox.keptCount,
        reason: reason ?? 'deliveries',
      });
      // Onto the deployment's target version: a new build's run starts from this snapshot (continue-as-new.ts).
      await makeContinueAsNewFunc<typeof lateAccountEventsWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
        merchantId: input.merchantId,
        consentId,
        callbackUrl,
        idleTimeout: input.idleTimeout,
        maxDeliveriesPerRun: input.maxDeliveriesPerRun,
        carried: inbox.snapshot(),
      });
    }
    // --- Wait for a report to deliver, or close when idle.
    const report = inbox.nextPending();
    if (report === undefined || callbackUrl === undefined) {
      const before = inbox.received;
      const woke = await condition(
        () => inbox.nextPending() !== undefined || inbox.received !== before || newVersion(),
        idleTimeout,
      );
      // Checked again: a report recorded in the same activation as the idle timer is still delivered.
      if (!woke && inbox.nextPending() === undefined && inbox.received === before) break;
      continue;
    }
    // --- Deliver the oldest pending report.
    await deliver(report, callbackUrl);
  }

  await condition(allHandlersFinished);
  log.info('Late bank reports idle: closing', { consentId, received: inbox.received, reports: inbox.keptCount });
  return inbox.state();

  async function deliver(report: LateBankReport, url: string): Promise<void> {
    const { workflowId } = workflowInfo();
    try {
      await merchant(`POST late report of ${report.bankCode} (task ${report.taskId}) to the merchant`).notifyMerchant({
        merchantId: input.merchantId,
        url,
        idempotencyKey: lateReportIdempotencyKey(workflowId, report),
        event: { ...lateBankReportEvent(report) },
      });
      inbox.settled(report, 'delivered');
      log.info('Late bank report delivered to the merchant', {
        consentId,
        taskId: report.taskId,
        bankCode: report.bankCode,
      });
    } catch (err) {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      // The merchant refused it (4xx) or stayed down past the retry budget: it stays queryable; go on with the next.
      inbox.settled(report, 'failed');
      log.error('Late bank report not delivered', {
        consentId,
        taskId: report.taskId,
        bankCode: report.bankCode,
        error: err.cause?.message ?? err.message,
      });
    }
  }
}

/** A new Current Version of the deployment: the run continues as new onto it at its next safe point. */
function newVersion(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged;
}
