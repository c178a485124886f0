import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import type { Activities } from '../activities/types';
import { TASK_STATUS_FINISHED } from '../shared/bank-wire';
import {
  DEFAULT_REFRESH_QUIET_PERIOD,
  DEFAULT_REFRESH_TIMEOUT,
  REFRESH_NOT_STARTED,
  accountEventSignal,
  attachRefreshUpdate,
  consentRefreshProgressQuery,
  lateAccountEventSignal,
  lateAccountEventsWorkflowType,
  type AccountEventSignalInput,
  type BankRefreshResult,
  type ConsentRefreshInput,
  type ConsentRefreshProgress,
  type ConsentRefreshResult,
  type LateAccountEventSignalInput,
  type RefreshEndReason,
} from '../shared/consent-refresh';
import { lateAccountEventsWorkflowId } from '../shared/ids';
import { ConsentId, RefreshTaskId } from '../shared/search-attributes';
import { BANK_ACTIVITY_OPTIONS, CLOCK_READ_OPTIONS } from './activity-options';
import { nextFanInStep, onQuietPeriodTimer } from './consent-refresh-state';
import type { lateAccountEventsWorkflow } from './late-account-events';
import { workflowMetrics } from './metrics';

const { startRefresh } = proxyActivities<Activities>(BANK_ACTIVITY_OPTIONS);
const { readClock } = proxyLocalActivities<Activities>(CLOCK_READ_OPTIONS);

/**
 * Versioning (README "Running workflows"): new runs (1) wait, without expectedBankCodes, for the banks learned
 * from earlier refreshes (input knownBankCodes) before the quiet period may end them, and list the learned banks
 * that never reported as `missing`; (2) restart the quiet period when its timer fired late (an outage:
 * consent-refresh-state.ts); (3) hand every event they cannot take (another task's, or one after they closed) to
 * the consent's lateAccountEventsWorkflow instead of only counting it. Runs from before keep the old fan-in.
 */
export const LEARNED_BANKS_PATCH = 'refresh-learned-banks-late-reports';

/**
 * Versioning: whether a quiet-period timer fired late is decided on the worker's clock read by a local activity,
 * recorded in the history, instead of on workflow time. Workflow time at that task did not survive a replay after
 * an outage (a query on a closed refresh that had restarted its quiet period failed with a nondeterminism error;
 * found by `npm run chaos`): the recorded reading replays as it was. Runs from before keep workflow time.
 */
export const RECORDED_CLOCK_PATCH = 'quiet-period-lateness-on-recorded-clock';

/** Hand-off attempts (signal, else start) before an event is given up; each failure means the target just changed. */
const HAND_OFF_ATTEMPTS = 5;

// Workflow time (deterministic in the sandbox); Date.now is linted out of workflow code.
const now = (): number => new Date().getTime();

/**
 * One refresh of a consent's accounts at banks other than the operating bank (DESIGN.md "Consent refresh").
 * PUT /refresh (activity) → taskId; then fan-in of accountEvent signals, one per bank, keyed by taskId.
 * Ends when every expected bank reported, or after the quiet period following the last report, and never
 * later than the timeout. A bank's failure taskStatus is recorded as that bank's result, not thrown.
 * Under LEARNED_BANKS_PATCH the quiet period waits for the learned banks, restarts after an outage, and events of
 * another task (or after the close) go on to the consent's lateAccountEventsWorkflow.
 */
export async function consentRefreshWorkflow(input: ConsentRefreshInput): Promise<ConsentRefreshResult> {
  // First, before anything else: decides the fan-in for the whole run (LEARNED_BANKS_PATCH).
  const v2 = patched(LEARNED_BANKS_PATCH);
  const recordedClock = v2 && patched(RECORDED_CLOCK_PATCH);
  const { consentId } = input;
  const expected =
    input.expectedBankCodes && input.expectedBankCodes.length > 0 ? [...new Set(input.expectedBankCodes)] : undefined;
  // Learned banks count only where the merchant named none; they are carried in the result either way.
  const knownGiven = v2 && input.knownBankCodes?.length ? [...new Set(input.knownBankCodes)].sort() : undefined;
  const known = expected ? undefined : knownGiven;
  // Without expected banks the quiet period is the only way to end early; with them it applies only if asked for.
  const quietPeriod = input.quietPeriod ?? (expected ? undefined : DEFAULT_REFRESH_QUIET_PERIOD);
  const timeout = input.timeout ?? DEFAULT_REFRESH_TIMEOUT;

  // --- State: written by handlers (record only), read by the body and the query.
  let taskId: string | undefined;
  let startFailure: string | undefined;
  let done = false;
  let endedBy: RefreshEndReason | undefined;
  let timedOut = false;
  const early: AccountEventSignalInput[] = []; // events that came before PUT /refresh answered
  const banks = new Map<string, BankRefreshResult>();
  let staleEvents = 0;
  let duplicateEvents = 0;
  // v2: events this run cannot take, to hand to the late workflow (by the body); when the last new bank came.
  const handOff: LateAccountEventSignalInput[] = [];
  let handedOffEvents = 0;
  let lastNewBankAt: number | undefined;

  const record = (event: AccountEventSignalInput): void => {
    if (v2 && done) {
      // The result is final: an event still arriving (even of this task) is a late report.
      handOff.push({ event, reason: 'refresh-closed' });
      return;
    }
    if (event.taskId !== taskId) {
      staleEvents++;
      log.info(v2 ? 'Stale accountEvent handed off as a late report' : 'Stale accountEvent ignored', {
        consentId,
        taskId,
        eventTaskId: event.taskId,
        bankCode: event.bankCode,
      });
      if (v2) handOff.push({ event, reason: 'other-task' });
      return;
    }
    if (banks.has(event.bankCode)) {
      duplicateEvents++;
      return;
    }
    lastNewBankAt = now();
    banks.set(event.bankCode, {
      bankCode: event.bankCode,
      bankName: event.bankName,
      taskStatus: event.taskStatus,
      succeeded: event.taskStatus === TASK_STATUS_FINISHED,
      accounts: event.accounts.map((a) => ({ accountId: a.accountId, eventType: a.eventType })),
      // Workflow time: the time of the workflow task that recorded the event (deterministic on replay).
      at: new Date().toISOString(),
    });
  };

  const missing = (): string[] => (expected ?? known ?? []).filter((code) => !banks.has(code));
  const allExpectedReported = (): boolean => expected !== undefined && missing().length === 0;
  const progress = (): ConsentRefreshProgress => ({
    consentId,
    taskId,
    done,
    banks: [...banks.values()],
    missing: missing(),
    ...(expected ? { expectedBankCodes: expected } : {}),
    staleEvents,
    duplicateEvents,
    ...(endedBy ? { endedBy } : {}),
    ...(startFailure ? { error: startFailure } : {}),
    ...(knownGiven ? { knownBankCodes: knownGiven } : {}),
    ...(v2 ? { handedOffEvents } : {}),
  });

  // --- Handlers first, so an update-with-start or an early signal finds them in the first workflow task.
  setHandler(accountEventSignal, (event) => {
    if (taskId === undefined) early.push(event);
    else record(event);
  });
  setHandler(consentRefreshProgressQuery, progress);
  setHandler(attachRefreshUpdate, async () => {
    await condition(() => taskId !== undefined || startFailure !== undefined);
    if (taskId === undefined) {
      throw ApplicationFailure.create({ type: REFRESH_NOT_STARTED, message: startFailure, nonRetryable: true });
    }
    return { consentId, taskId };
  });

  if (!workflowInfo().typedSearchAttributes.get(ConsentId))
    upsertSearchAttributes([{ key: ConsentId, value: consentId }]);
  setCurrentDetails(details(progress(), 'Calling PUT /refresh'));

  // The timeout bounds everything from here, PUT /refresh included.
  void sleep(timeout, { summary: 'refresh timeout' }).then(() => {
    timedOut = true;
  });

  // --- PUT /refresh, abandoned (cancelled) if the timeout comes first.
  try {
    const scope = new CancellationScope();
    const started = scope.run(() =>
      startRefresh.executeWithOptions({ summary: `PUT /refresh for consent ${consentId}` }, [{ consentId }]),
    );
    const first = await Promise.race([started, condition(() => timedOut).then(() => undefined)]);
    if (first === undefined) {
      scope.cancel();
      throw ApplicationFailure.create({
        type: REFRESH_NOT_STARTED,
        message: `PUT /refresh did not answer within the refresh timeout (${String(timeout)})`,
        nonRetryable: true,
      });
    }
    taskId = first.taskId;
  } catch (err) {
    if (isCancellation(err)) throw err;
    const ours = err instanceof ApplicationFailure && err.type === REFRESH_NOT_STARTED;
    // An ActivityFailure's own message is generic: the bank's reason is its cause's.
    const reason = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
    startFailure = ours ? err.message : `PUT /refresh failed: ${reason}`;
    done = true;
    setCurrentDetails(`**Refresh not started**: ${startFailure}`);
    log.warn('Refresh not started', { consentId, error: startFailure });
    if (v2) {
      // No task of ours exists: what came meanwhile was another task's.
      handOff.push(...early.splice(0).map((event) => ({ event, reason: 'other-task' as const })));
      await handOffPending();
    }
    workflowMetrics.refreshFinished('not-started', 0);
    await condition(allHandlersFinished); // attach updates answer with the failure before the run closes
    if (ours) throw err;
    throw ApplicationFailure.create({
      type: REFRESH_NOT_STARTED,
      message: startFailure,
      cause: err instanceof Error ? err : undefined,
      nonRetryable: true,
    });
  }

  upsertSearchAttributes([{ key: RefreshTaskId, value: taskId }]);
  log.info('Refresh task started', { consentId, taskId, expectedBankCodes: expected });
  for (const event of early.splice(0)) record(event);

  if (v2) await fanIn();
  else {
    // --- Fan-in: wake on each new bank, the timeout, or the end of the quiet period.
    for (;;) {
      setCurrentDetails(details(progress(), 'Waiting for banks'));
      if (allExpectedReported()) {
        endedBy = 'all-reported';
        break;
      }
      if (timedOut) {
        endedBy = 'timeout';
        break;
      }
      const reported = banks.size;
      const woken = () => banks.size !== reported || timedOut;
      if (quietPeriod !== undefined && reported > 0) {
        // The quiet period runs from the last new bank: a stale or duplicate event does not extend it.
        if (!(await condition(woken, quietPeriod))) {
          endedBy = 'quiet-period';
          break;
        }
      } else {
        await condition(woken);
      }
    }
  }

  done = true;
  if (v2) {
    // Events that came in the last moments (or while handing off) still reach the late workflow before the close.
    do {
      await handOffPending();
      await condition(allHandlersFinished);
    } while (handOff.length > 0);
  }
  const result: ConsentRefreshResult = { ...progress(), taskId, done: true, endedBy: endedBy! };
  workflowMetrics.refreshFinished(result.endedBy, result.missing.length);
  setCurrentDetails(details(result, `Done (${endedBy})`));
  log.info('Refresh finished', {
    consentId,
    taskId,
    endedBy,
    reported: result.banks.map((b) => b.bankCode),
    missing: result.missing,
    staleEvents,
    duplicateEvents,
    ...(v2 ? { handedOffEvents } : {}),
  });
  await condition(allHandlersFinished);
  return result;

  /**
   * v2 fan-in (consent-refresh-state.ts decides): wake on each new bank, an event to hand off, the timeout, or the
   * end of the quiet period; a quiet-period timer that fired late restarts the quiet period instead of closing.
   */
  async function fanIn(): Promise<void> {
    const quietPeriodMs = quietPeriod === undefined ? undefined : msToNumber(quietPeriod);
    let quietRestartedAt: number | undefined;
    for (;;) {
      await handOffPending();
      setCurrentDetails(details(progress(), 'Waiting for banks'));
      const step = nextFanInStep({
        expectedBankCodes: expected,
        knownBankCodes: known,
        reported: new Set(banks.keys()),
        timedOut,
        quietPeriodMs,
        lastNewBankAt,
        quietRestartedAt,
      });
      if (step.kind === 'end') {
        endedBy = step.endedBy;
        return;
      }
      const reported = banks.size;
      const woken = () => banks.size !== reported || timedOut || handOff.length > 0;
      if (step.kind === 'wait') {
        await condition(woken);
        continue;
      }
      const remaining = step.dueAt - now();
      if (remaining > 0 && (await wakeOrTimer(woken, remaining, 'quiet period'))) continue;
      if (woken()) continue; // the timer and something new in one activation: the new thing wins
      // The worker's clock against the due time in workflow (server) time: hosts in sync within the threshold.
      const firedAt = recordedClock ? (await readClock({})).nowMs : now();
      const fired = onQuietPeriodTimer({ dueAt: step.dueAt, now: firedAt });
      if (fired.close) {
        endedBy = 'quiet-period';
        return;
      }
      quietRestartedAt = fired.restartAt;
      log.warn('Quiet-period timer fired late (an outage): quiet period restarted', {
        consentId,
        taskId,
        lateByMs: fired.lateByMs,
        reported: [...banks.keys()],
      });
    }
  }

  /** Hands the recorded events this run cannot take to the late workflow, in order. */
  async function handOffPending(): Promise<void> {
    while (handOff.length > 0) {
      const next = handOff[0]!;
      const handed = await handOffLateReport(next);
      handOff.shift();
      if (handed) handedOffEvents++;
      else
        log.error('accountEvent could not be handed to the late workflow (kept in this history only)', {
          consentId,
          taskId,
          eventTaskId: next.event.taskId,
          bankCode: next.event.bankCode,
        });
    }
  }

  /**
   * Signal the consent's late workflow; if none runs, start it as an abandoned child carrying the report. A
   * workflow cannot signal-with-start: a failed signal (not running) and a failed start (started meanwhile by the
   * receiver) each mean the other will work.
   */
  async function handOffLateReport(report: LateAccountEventSignalInput): Promise<boolean> {
    const workflowId = lateAccountEventsWorkflowId(consentId);
    for (let attempt = 1; attempt <= HAND_OFF_ATTEMPTS; attempt++) {
      try {
        await getExternalWorkflowHandle(workflowId).signal(lateAccountEventSignal, report);
        return true;
      } catch (err) {
        if (isCancellation(err)) throw err;
      }
      try {
        await startChild<typeof lateAccountEventsWorkflow>(lateAccountEventsWorkflowType, {
          workflowId,
          args: [
            { merchantId: input.merchantId, consentId, callbackUrl: input.lateReportsCallbackUrl, handedOff: [report] },
          ],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          typedSearchAttributes: [{ key: ConsentId, value: consentId }],
          staticSummary: `Late bank reports of consent ${consentId}`,
        });
        return true;
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    }
    return false;
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

/** Current details for the Web UI: which banks reported (and how), which are still missing. */
function details(p: ConsentRefreshProgress, headline: string): string {
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
