import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import { TASK_STATUS_FINISHED } from '../shared/bank-wire';
import {
  DEFAULT_REFRESH_QUIET_PERIOD,
  DEFAULT_REFRESH_TIMEOUT,
  REFRESH_NOT_STARTED,
  accountEventSignal,
  attachRefreshUpdate,
  consentRefreshProgressQuery,
  type AccountEventSignalInput,
  type BankRefreshResult,
  type ConsentRefreshInput,
  type ConsentRefreshProgress,
  type ConsentRefreshResult,
  type RefreshEndReason,
} from '../shared/consent-refresh';
import { ConsentId, RefreshTaskId } from '../shared/search-attributes';
import { BANK_ACTIVITY_OPTIONS } from './activity-options';
import { workflowMetrics } from './metrics';

const { startRefresh } = proxyActivities<Activities>(BANK_ACTIVITY_OPTIONS);

/**
 * One refresh of a consent's accounts at banks other than the operating bank (DESIGN.md "Consent refresh").
 * PUT /refresh (activity) → taskId; then fan-in of accountEvent signals, one per bank, keyed by taskId.
 * Ends when every expected bank reported, or after the quiet period following the last report, and never
 * later than the timeout. A bank's failure taskStatus is recorded as that bank's result, not thrown.
 */
export async function consentRefreshWorkflow(input: ConsentRefreshInput): Promise<ConsentRefreshResult> {
  const { consentId } = input;
  const expected =
    input.expectedBankCodes && input.expectedBankCodes.length > 0 ? [...new Set(input.expectedBankCodes)] : undefined;
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

  const record = (event: AccountEventSignalInput): void => {
    if (event.taskId !== taskId) {
      staleEvents++;
      log.info('Stale accountEvent ignored', {
        consentId,
        taskId,
        eventTaskId: event.taskId,
        bankCode: event.bankCode,
      });
      return;
    }
    if (banks.has(event.bankCode)) {
      duplicateEvents++;
      return;
    }
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

  const missing = (): string[] => (expected ?? []).filter((code) => !banks.has(code));
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

  done = true;
  const result: ConsentRefreshResult = { ...progress(), taskId, done: true, endedBy };
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
  });
  await condition(allHandlersFinished);
  return result;
}

/** Current details for the Web UI: which banks reported (and how), which are still missing. */
function details(p: ConsentRefreshProgress, headline: string): string {
  const lines = [`**${headline}** — consent \`${p.consentId}\`${p.taskId ? `, task \`${p.taskId}\`` : ''}`];
  for (const b of p.banks) {
    lines.push(
      `- ${b.succeeded ? '✅' : '❌'} ${b.bankCode} (${b.bankName}): ${b.taskStatus}, ${b.accounts.length} account(s) at ${b.at}`,
    );
  }
  if (p.missing.length > 0) lines.push(`- ⏳ not reported: ${p.missing.join(', ')}`);
  if (p.staleEvents || p.duplicateEvents)
    lines.push(`- ignored: ${p.staleEvents} stale, ${p.duplicateEvents} duplicate`);
  return lines.join('\n');
}
