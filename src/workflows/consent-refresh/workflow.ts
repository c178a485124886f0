import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../../activities/types';
import {
  REFRESH_NOT_STARTED,
  accountEventSignal,
  attachRefreshUpdate,
  consentRefreshProgressQuery,
  type AccountEventSignalInput,
  type ConsentRefreshInput,
  type ConsentRefreshResult,
} from '../../shared/consent-refresh';
import { ConsentId, RefreshTaskId } from '../../shared/search-attributes';
import { BANK_ACTIVITY_OPTIONS, CLOCK_READ_OPTIONS } from '../activity-options';
import { workflowMetrics } from '../metrics';
import { refreshDetails } from './details';
import { nextFanInStep, onQuietPeriodTimer } from './fan-in';
import { handOffPending, lateReportsTarget, type LateReportsTarget } from './hand-off';
import { ConsentRefresh, isNotStarted, notStartedMessage, type AccountEventOutcome } from './refresh';

const { startRefresh } = proxyActivities<Activities>(BANK_ACTIVITY_OPTIONS);
const { readClock } = proxyLocalActivities<Activities>(CLOCK_READ_OPTIONS);

// Workflow time (deterministic in the sandbox); Date.now is linted out of workflow code.
const now = (): number => new Date().getTime();

/**
 * One refresh of a consent's accounts at banks other than the operating bank (docs/architecture.md, "Consent refresh and account webhooks").
 * PUT /refresh (activity) → taskId; then fan-in of accountEvent signals, one per bank, keyed by taskId.
 * Ends when every expected bank reported, or after the quiet period following the last report, and never
 * later than the timeout. A bank's failure taskStatus is recorded as that bank's result, not thrown.
 * Events of another task, or after the close, go on to the consent's lateAccountEventsWorkflow.
 * The decisions are in refresh.ts (what an event means) and fan-in.ts (when the fan-in ends).
 */
export async function consentRefreshWorkflow(input: ConsentRefreshInput): Promise<ConsentRefreshResult> {
  const refresh = new ConsentRefresh(input);
  const { consentId, settings } = refresh;
  const lateReports = lateReportsTarget(input);

  // --- Handlers first, so an update-with-start or an early signal finds them in the first workflow task.
  setHandler(accountEventSignal, (event) => logOutcome(refresh, event, refresh.receive(event, now())));
  setHandler(consentRefreshProgressQuery, () => refresh.progress());
  setHandler(attachRefreshUpdate, async () => {
    await condition(() => refresh.taskId !== undefined || refresh.startFailure !== undefined);
    if (refresh.taskId === undefined) {
      throw ApplicationFailure.create({ type: REFRESH_NOT_STARTED, message: refresh.startFailure, nonRetryable: true });
    }
    return { consentId, taskId: refresh.taskId };
  });

  if (!workflowInfo().typedSearchAttributes.get(ConsentId))
    upsertSearchAttributes([{ key: ConsentId, value: consentId }]);
  setCurrentDetails(refreshDetails(refresh.progress(), 'Calling PUT /refresh'));

  // The timeout bounds everything from here, PUT /refresh included.
  void sleep(settings.timeout, { summary: 'refresh timeout' }).then(() => {
    refresh.timedOut = true;
  });

  // --- 1. PUT /refresh: the bank's task id, or the run fails with REFRESH_NOT_STARTED.
  let taskId: string;
  try {
    taskId = await putRefresh(consentId, settings.timeout, () => refresh.timedOut);
  } catch (err) {
    if (isCancellation(err)) throw err;
    refresh.notStarted(notStartedMessage(err));
    setCurrentDetails(`**Refresh not started**: ${refresh.startFailure}`);
    log.warn('Refresh not started', { consentId, error: refresh.startFailure });
    await handOffPending(refresh, lateReports);
    workflowMetrics.refreshFinished('not-started', 0);
    await condition(allHandlersFinished); // attach updates answer with the failure before the run closes
    if (isNotStarted(err)) throw err;
    throw ApplicationFailure.create({
      type: REFRESH_NOT_STARTED,
      message: refresh.startFailure,
      cause: err instanceof Error ? err : undefined,
      nonRetryable: true,
    });
  }
  upsertSearchAttributes([{ key: RefreshTaskId, value: taskId }]);
  log.info('Refresh task started', { consentId, taskId, expectedBankCodes: settings.expected });
  for (const { event, outcome } of refresh.started(taskId, now())) logOutcome(refresh, event, outcome);

  // --- 2. Collect one accountEvent per bank for this task, until all reported, the quiet period, or the timeout.
  await collectBankReports(refresh, lateReports);
  refresh.done = true;

  // --- 3. Late reports: events that came in the last moments (or while handing off) reach the late workflow.
  do {
    await handOffPending(refresh, lateReports);
    await condition(allHandlersFinished);
  } while (refresh.handOff.length > 0);

  // --- 4. The result.
  const result = refresh.result();
  workflowMetrics.refreshFinished(result.endedBy, result.missing.length);
  setCurrentDetails(refreshDetails(result, `Done (${result.endedBy})`));
  log.info('Refresh finished', {
    consentId,
    taskId,
    endedBy: result.endedBy,
    reported: result.banks.map((b) => b.bankCode),
    missing: result.missing,
    staleEvents: result.staleEvents,
    duplicateEvents: result.duplicateEvents,
    handedOffEvents: result.handedOffEvents,
  });
  await condition(allHandlersFinished);
  return result;
}

/** PUT /refresh (activity), abandoned (cancelled) if the timeout comes first. */
async function putRefresh(consentId: string, timeout: Duration, timedOut: () => boolean): Promise<string> {
  const scope = new CancellationScope();
  const started = scope.run(() =>
    startRefresh.executeWithOptions({ summary: `PUT /refresh for consent ${consentId}` }, [{ consentId }]),
  );
  const first = await Promise.race([started, condition(timedOut).then(() => undefined)]);
  if (first === undefined) {
    scope.cancel();
    throw ApplicationFailure.create({
      type: REFRESH_NOT_STARTED,
      message: `PUT /refresh did not answer within the refresh timeout (${String(timeout)})`,
      nonRetryable: true,
    });
  }
  return first.taskId;
}

/**
 * The fan-in (fan-in.ts decides): wake on each new bank, an event to hand off, the timeout, or the end of the
 * quiet period; a quiet-period timer that fired late (an outage) restarts the quiet period instead of closing.
 */
async function collectBankReports(refresh: ConsentRefresh, lateReports: LateReportsTarget): Promise<void> {
  let quietRestartedAt: number | undefined;
  for (;;) {
    await handOffPending(refresh, lateReports);
    setCurrentDetails(refreshDetails(refresh.progress(), 'Waiting for banks'));
    const step = nextFanInStep(refresh.fanInView(quietRestartedAt));
    if (step.kind === 'end') {
      refresh.endedBy = step.endedBy;
      return;
    }
    const reported = refresh.reportedCount;
    const woken = () => refresh.reportedCount !== reported || refresh.timedOut || refresh.handOff.length > 0;
    if (step.kind === 'wait') {
      await condition(woken);
      continue;
    }
    const remaining = step.dueAt - now();
    if (remaining > 0 && (await wakeOrTimer(woken, remaining, 'quiet period'))) continue;
    if (woken()) continue; // the timer and something new in one activation: the new thing wins
    // The worker's clock, recorded (workflow time at this task did not survive a replay after an outage), against
    // the due time in workflow (server) time: hosts in sync within the threshold.
    const firedAt = (await readClock({})).nowMs;
    const fired = onQuietPeriodTimer({ dueAt: step.dueAt, now: firedAt });
    if (fired.close) {
      refresh.endedBy = 'quiet-period';
      return;
    }
    quietRestartedAt = fired.restartAt;
    log.warn('Quiet-period timer fired late (an outage): quiet period restarted', {
      consentId: refresh.consentId,
      taskId: refresh.taskId,
      lateByMs: fired.lateByMs,
      reported: refresh.reportedBankCodes(),
    });
  }
}

/** Resolves true when `woken` holds, false when `ms` passed first (a timer with a summary for the Web UI). */
function wakeOrTimer(woken: () => boolean, ms: number, summary: string): Promise<boolean> {
  return CancellationScope.cancellable(async () => {
    try {
      return await Promise.race([sleep(ms, { summary }).then(() => false), condition(woken).then(() => true)]);
    } finally {
      CancellationScope.current().cancel();
    }
  });
}

function logOutcome(refresh: ConsentRefresh, event: AccountEventSignalInput, outcome: AccountEventOutcome): void {
  if (outcome !== 'stale') return;
  log.info('Stale accountEvent handed off as a late report', {
    consentId: refresh.consentId,
    taskId: refresh.taskId,
    eventTaskId: event.taskId,
    bankCode: event.bankCode,
  });
}
