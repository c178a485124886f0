import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  metricMeter,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, StatusRead } from '../../activities/types';
import { BankFailureType } from '../../shared/failure-types';
import {
  FinanceApplicationFailureType,
  financeApplicationStateQuery,
  financeApplicationStatusChangedSignal,
  startFinanceApplicationUpdate,
  STATUS_WAIT_LIMITS,
  waitForStatusChangeUpdate,
  type FinanceApplicationInput,
  type FinanceApplicationStarted,
  type FinanceApplicationState,
  type StatusChange,
  type StatusSource,
  type StatusWaitRequest,
  type StatusWaitResult,
  UNKNOWN_AT_BANK_STATUS,
} from '../../shared/finance-application';
import {
  DuplicateFinanceApplicationId,
  FinanceApplicationId,
  FinanceApplicationStatus,
  MerchantReference,
} from '../../shared/search-attributes';
import { bankReadPriority, bankReadsTaskQueue } from '../../shared/task-queues';
import {
  BANK_ACTIVITY_OPTIONS,
  CALLBACK_CHECK_OPTIONS,
  CONFIRMATION_READ_OPTIONS,
  MERCHANT_CALLBACK_ACTIVITY_OPTIONS,
  POLL_ACTIVITY_OPTIONS,
} from '../activity-options';
import { FinanceApplication, learnedAt, resolveSettings } from './state';
import { workflowMetrics } from '../metrics';
import { OTHER_ID_LIMITS } from './webhook-ids';
import { OTHER_STATUS, WorkflowMetric } from '../../shared/metric-names';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { readFinanceSnapshot } from '../snapshots';

/**
 * Versioning (README "Running workflows"): runs that passed this point before the poll policy existed keep
 * the old loop (a timer per poll, reads on the main task queue) until they end or continue as new; new runs
 * poll through one activity on the bank-reads task queue.
 */
export const POLL_POLICY_PATCH = 'poll-activity-on-bank-reads-queue';

/**
 * Versioning: once this application's webhooks have proven themselves, a change a webhook announced no longer
 * cancels and restarts the polling activity (that cost a workflow task and an activity task on the webhook's
 * path, at every change). The running poll finds the new status unknown to it at its next read and starts
 * again from there. Runs recorded before this point keep restarting at every change.
 */
export const KEEP_POLL_PATCH = 'poll-kept-across-webhook-changes';

/**
 * Versioning: runs started before the callback allow-list went straight to creation; new runs with a callbackUrl
 * first ask the worker for its verdict (a local activity) and fail, before the bank is called, when refused.
 */
export const CALLBACK_ALLOW_LIST_PATCH = 'check-callback-url-before-create';

/**
 * Versioning: new runs report another application the bank holds for this reference (its webhooks carry
 * another financeApplicationId) through a search attribute, a metric, the Web UI's details and the merchant's
 * callback; runs from before only count such webhooks as mismatched.
 */
export const DUPLICATES_PATCH = 'report-duplicate-applications';

/**
 * Versioning: new runs treat a 404 on the status read of their application (BankApplicationUnknown) as an anomaly:
 * FinanceApplicationStatus UNKNOWN_AT_BANK, a metric, one log line, slow polling, and an end after a day of nothing
 * but 404s (src/shared/finance-application.ts). Runs from before it count the 404 as a failed read.
 */
export const UNKNOWN_AT_BANK_PATCH = 'report-application-unknown-at-bank';

/**
 * Versioning: new runs believe another financeApplicationId only when a status read of it at the bank answers (a
 * 404 means invented), keep at most a few, read at most a few over the application's life, and only count the rest
 * (src/workflows/finance-application/webhook-ids.ts). Runs from before report every other id they see (DUPLICATES_PATCH), unread.
 */
export const CONFIRM_DUPLICATES_PATCH = 'confirm-duplicate-applications-at-bank';

// Workflow time (deterministic in the sandbox); Date.now is linted out of workflow code.
const now = (): number => new Date().getTime();

/** Activities with a summary the Web UI shows on the event (the proxy is cheap to build per call). */
const bank = (summary: string) => proxyActivities<Activities>({ ...BANK_ACTIVITY_OPTIONS, summary });
const merchant = (summary: string) => proxyActivities<Activities>({ ...MERCHANT_CALLBACK_ACTIVITY_OPTIONS, summary });
/** The callback allow-list is in the worker's environment: the workflow learns the verdict from a local activity. */
const { checkCallbackUrl } = proxyLocalActivities<Activities>(CALLBACK_CHECK_OPTIONS);
/**
 * Status reads go to the rate-limited bank-reads task queue (src/shared/task-queues.ts), each under its merchant's
 * fairness key: a merchant's share of the read ceiling. (Options of a command, not commands: no patch needed.)
 */
const reads = (summary: string, merchantId: string | undefined) =>
  proxyActivities<Activities>({
    ...BANK_ACTIVITY_OPTIONS,
    taskQueue: bankReadsTaskQueue(workflowInfo().taskQueue),
    priority: bankReadPriority(merchantId),
    summary,
  });
/** A read of another application's id, to confirm it exists (bank-reads queue, shorter retries than our own reads). */
const confirmations = (merchantId: string | undefined) =>
  proxyActivities<Activities>({
    ...CONFIRMATION_READ_OPTIONS,
    taskQueue: bankReadsTaskQueue(workflowInfo().taskQueue),
    priority: bankReadPriority(merchantId),
    summary: 'Confirm another application at the bank',
  });
const poller = (merchantId: string | undefined) =>
  proxyActivities<Activities>({
    ...POLL_ACTIVITY_OPTIONS,
    taskQueue: bankReadsTaskQueue(workflowInfo().taskQueue),
    priority: bankReadPriority(merchantId),
    summary: 'Poll status (retries are the polls)',
  });

/**
 * One finance application, from creation to a terminal status or the deadline (DESIGN.md). Started with
 * update-with-start: the start update resolves with the bank's create response. Webhooks arrive as signals
 * and trigger one read each (a burst coalesces); between them one polling activity, whose retries Temporal
 * schedules by the poll policy, is the fallback. Handlers only record; decisions are in FinanceApplication.
 */
export async function financeApplicationWorkflow(input: FinanceApplicationInput): Promise<FinanceApplicationState> {
  const { settings, problems } = resolveSettings(input.settings);
  if (problems.length > 0) {
    throw ApplicationFailure.nonRetryable(problems.join('; '), FinanceApplicationFailureType.InvalidInput);
  }
  const { merchantId, merchantReference } = input;
  const app = new FinanceApplication(merchantReference, settings, {
    now: now(),
    // Read by this build's schema reader: any version it knows or a newer one (snapshots.ts).
    carried: input.carried === undefined ? undefined : readFinanceSnapshot(input.carried),
    notifies: input.callbackUrl !== undefined,
  });
  const state = app.state;
  let createFailure: ApplicationFailure | undefined;

  // Handlers first, before any await, so an update or signal delivered with the start finds them.
  setHandler(financeApplicationStatusChangedSignal, ({ financeApplicationId }) =>
    app.receiveWebhook(financeApplicationId, now()),
  );
  setHandler(financeApplicationStateQuery, () => state);
  // The deploy procedure's nudge: its workflow task is what shows a sleeping run the new version (versioning.ts).
  setHandler(upgradeCheckSignal, () => undefined);
  setHandler(
    startFinanceApplicationUpdate,
    async ({ requestId }): Promise<FinanceApplicationStarted> => {
      await condition(() => state.bank !== undefined || createFailure !== undefined);
      if (!state.bank || !state.financeApplicationId) {
        throw (
          createFailure ??
          ApplicationFailure.nonRetryable('application not created', FinanceApplicationFailureType.CreateFailed)
        );
      }
      return {
        merchantReference,
        workflowId: workflowInfo().workflowId,
        financeApplicationId: state.financeApplicationId,
        bank: state.bank,
        created: input.startRequestId !== undefined && requestId === input.startRequestId,
      };
    },
    {
      validator: (arg: { requestId?: unknown } | undefined) => {
        if (typeof arg?.requestId !== 'string') {
          throw ApplicationFailure.nonRetryable(
            'requestId must be a string',
            FinanceApplicationFailureType.InvalidUpdate,
          );
        }
      },
    },
  );

  // Status waits (the facade's long-poll): each is recorded (accepted, a timer, completed), so the validator bounds
  // how many a run holds; they end when the status moves, the workflow is done, their timer fires, or the run
  // closes (then `closing`: the caller asks the next run). Nothing is read for them.
  let statusWaits = 0;
  let closing = false;
  setHandler(
    waitForStatusChangeUpdate,
    async ({ fromStatus, timeoutMs }: StatusWaitRequest): Promise<StatusWaitResult> => {
      const settled = () => state.status !== fromStatus || state.done || closing;
      statusWaits++;
      try {
        // Already settled: answer without a timer (nothing more recorded than the update itself).
        if (!settled()) await condition(settled, timeoutMs);
      } finally {
        statusWaits--;
      }
      const outcome = state.status !== fromStatus ? 'changed' : state.done ? 'done' : closing ? 'closing' : 'timeout';
      return { outcome, state };
    },
    {
      validator: (arg: Partial<StatusWaitRequest> | undefined) => {
        const { fromStatus, timeoutMs } = arg ?? {};
        if (
          typeof fromStatus !== 'string' ||
          fromStatus.length === 0 ||
          fromStatus.length > STATUS_WAIT_LIMITS.maxStatusLength ||
          typeof timeoutMs !== 'number' ||
          !Number.isInteger(timeoutMs) ||
          timeoutMs < 1 ||
          timeoutMs > STATUS_WAIT_LIMITS.maxTimeoutMs
        ) {
          throw ApplicationFailure.nonRetryable(
            `fromStatus must be 1 to ${STATUS_WAIT_LIMITS.maxStatusLength} characters and timeoutMs an integer from 1 to ${STATUS_WAIT_LIMITS.maxTimeoutMs}`,
            FinanceApplicationFailureType.InvalidStatusWait,
          );
        }
        if (closing) {
          throw ApplicationFailure.nonRetryable(
            'the run is closing; ask again',
            FinanceApplicationFailureType.StatusWaitClosing,
          );
        }
        if (statusWaits >= STATUS_WAIT_LIMITS.maxWaitsPerRun) {
          throw ApplicationFailure.nonRetryable(
            `this application already has ${STATUS_WAIT_LIMITS.maxWaitsPerRun} status waits`,
            FinanceApplicationFailureType.TooManyStatusWaits,
          );
        }
      },
    },
  );

  upsertSearchAttributes([{ key: MerchantReference, value: merchantReference }]);

  // A callback URL outside the allow-list fails the run (and the start update: a 400 at the facade) before
  // anything reaches the bank. Continued runs skip it: their application exists (notifyMerchant checks again).
  if (input.callbackUrl !== undefined && !state.bank && patched(CALLBACK_ALLOW_LIST_PATCH)) {
    const refusal = await callbackRefusal(input.callbackUrl);
    if (refusal) {
      createFailure = refusal;
      workflowMetrics.applicationFinished('callback_refused', 'none');
      await handlersFinished();
      throw refusal;
    }
  }

  // Merchant callbacks run beside the main loop, in order, so a slow merchant never delays status tracking.
  let notifierStop: 'drain' | 'now' | undefined;
  const notifierDone = input.callbackUrl ? runNotifier(input.callbackUrl) : Promise.resolve();

  if (!state.bank) {
    try {
      await create();
    } catch (err) {
      notifierStop = 'now';
      await notifierDone;
      await handlersFinished();
      throw err;
    }
  }

  const continued = patched(POLL_POLICY_PATCH) ? await followWithPollActivity() : await followWithPollTimer();
  if (continued) return continued;

  unconfirmedCounted(true);
  describe();
  upsertSearchAttributes([{ key: FinanceApplicationStatus, value: app.searchStatus() }]);
  notifierStop = 'drain';
  await notifierDone;
  await handlersFinished();
  workflowMetrics.applicationFinished(state.outcome ?? 'none', statusLabel(state.status));
  log.info('Finance application finished', { ...logIds(), outcome: state.outcome, status: state.status });
  return state;

  /**
   * The loop: each batch of webhooks triggers one read; beside it one polling activity runs, started again
   * from the latest change once a change was recorded (the old one is cancelled without waiting, off the
   * webhook's path). One deadline timer per run. Returns the continue-as-new result, or undefined when done.
   */
  async function followWithPollActivity(): Promise<FinanceApplicationState | undefined> {
    let deadlinePassed = now() >= app.deadline();
    if (!deadlinePassed) void sleep(app.deadline() - now()).then(() => (deadlinePassed = true));
    let poll: Poll | undefined;
    const keepPollAcrossWebhookChanges = patched(KEEP_POLL_PATCH);
    const reportDuplicates = patched(DUPLICATES_PATCH);
    const confirmDuplicates = reportDuplicates && patched(CONFIRM_DUPLICATES_PATCH);
    describe();
    for (;;) {
      if (app.isTerminal()) {
        app.finish('terminal');
        break;
      }
      if (deadlinePassed || now() >= app.deadline()) {
        app.finish('deadline');
        log.warn('Finance application deadline reached before a terminal status', logIds());
        break;
      }
      if (app.givesUpOnUnknown(now())) {
        app.finish('unknown_at_bank');
        log.error('The bank has not known this application for a day: no longer followed', {
          ...logIds(),
          unknownAtBank: state.unknownAtBank,
        });
        break;
      }
      if (poll?.settled) {
        const failed = took(poll);
        poll = undefined;
        // A poll that failed outright (not a bank error: those are retried inside it) starts again later.
        if (failed)
          await condition(() => app.hasWebhooks() || deadlinePassed || newVersion(), settings.slowPollIntervalMs);
        continue;
      }
      if (shouldContinueAsNew()) {
        if (poll) retire(poll);
        return await continueAsNewWith();
      }
      if (app.hasWebhooks()) {
        const { ours, mismatched, since } = app.takeWebhooks();
        if (confirmDuplicates) {
          // Our own status first; then the few other ids there is room to read (none most of the time).
          if (ours > 0) await readStatus('webhook', since);
          const others = app.otherIdsToConfirm();
          if (others.length > 0) await confirmOtherIds(others);
          unconfirmedCounted();
          continue;
        }
        if (reportDuplicates) duplicatesFound(app.duplicatesSeen(app.otherIdsToConfirm()));
        else if (mismatched > 0)
          log.warn('Webhook for another financeApplicationId ignored', { ...logIds(), ignored: mismatched });
        if (ours > 0) await readStatus('webhook', since);
        continue;
      }
      // A poll started before webhooks proved live (or, in older runs, before the last change) has old
      // inputs: start afresh.
      if (poll && poll.since !== pollKey(keepPollAcrossWebhookChanges)) {
        retire(poll);
        poll = undefined;
      }
      poll ??= startPoll(pollKey(keepPollAcrossWebhookChanges));
      const current = poll;
      await condition(() => app.hasWebhooks() || current.settled || deadlinePassed || newVersion());
    }
    if (poll) retire(poll);
    return undefined;
  }

  /** Runs from before the poll policy (POLL_POLICY_PATCH): unchanged, so their histories replay. */
  async function followWithPollTimer(): Promise<FinanceApplicationState | undefined> {
    let nextPollAt = now() + app.legacyPollIntervalMs();
    describe();
    while (!state.done) {
      if (app.isTerminal()) {
        app.finish('terminal');
        break;
      }
      const deadlineAt = app.deadline();
      if (now() >= deadlineAt) {
        app.finish('deadline');
        log.warn('Finance application deadline reached before a terminal status', logIds());
        break;
      }
      if (shouldContinueAsNew()) return await continueAsNewWith();

      const wait = Math.min(nextPollAt, deadlineAt) - now();
      const woke = wait > 0 ? await condition(() => app.hasWebhooks() || newVersion(), wait) : app.hasWebhooks();
      let source: StatusSource;
      let announcedAt: number | undefined;
      if (woke) {
        const { ours, mismatched, since } = app.takeWebhooks();
        if (mismatched > 0)
          log.warn('Webhook for another financeApplicationId ignored', { ...logIds(), ignored: mismatched });
        if (ours === 0) continue;
        source = 'webhook';
        announcedAt = since;
      } else if (now() >= nextPollAt) {
        source = 'poll';
      } else {
        continue; // the deadline timer fired: the loop's top ends the workflow
      }
      await legacyReadStatus(source, announcedAt);
      nextPollAt = now() + app.legacyPollIntervalMs();
    }
    return undefined;
  }

  async function continueAsNewWith(): Promise<FinanceApplicationState> {
    notifierStop = 'now';
    await notifierDone;
    await handlersFinished();
    log.info('Continuing as new', {
      ...logIds(),
      reason: continueAsNewReason(workflowInfo(), settings.continueAsNewAfterEvents),
      historyLength: workflowInfo().historyLength,
    });
    // Onto the deployment's target version: a new build's run starts from this snapshot (continue-as-new.ts).
    return await makeContinueAsNewFunc<typeof financeApplicationWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
      ...input,
      carried: app.snapshot(),
    });
  }

  function startPoll(since: string): Poll {
    const input = app.pollInput(now());
    const poll: Poll = { settled: false, scope: new CancellationScope(), since };
    poll.scope
      .run(() =>
        poller(merchantId).pollApplicationStatus({
          financeApplicationId: state.financeApplicationId!,
          merchantReference,
          ...input,
        }),
      )
      .then(
        (read) => (poll.read = read),
        (err: unknown) => (poll.error = err),
      )
      .finally(() => (poll.settled = true));
    return poll;
  }

  /**
   * What a running poll was started from: a change of it makes the poll start again. Under KEEP_POLL_PATCH
   * only webhooks proving live count (a change found by polling settles the poll, which then starts afresh).
   */
  function pollKey(keepAcrossWebhookChanges: boolean): string {
    return keepAcrossWebhookChanges ? `${state.webhooksLive}` : `${state.quietSince ?? ''}|${state.webhooksLive}`;
  }

  /** Stops a poll that is no longer wanted; what it found if it had already settled is still taken. */
  function retire(poll: Poll): void {
    if (poll.settled) took(poll);
    else poll.scope.cancel();
  }

  /** Takes what a settled poll found: a new status, a cancellation (ignored) or a failure (logged: true). */
  function took(poll: Poll): boolean {
    if (poll.read) {
      const change = app.read(poll.read.status, 'poll', learnedAt(now(), poll.read.readAt), poll.read.webhooksKnown);
      knownAgain();
      if (change) changed(change);
      return false;
    }
    if (poll.error === undefined || isCancellation(poll.error) || isCancelledActivity(poll.error)) return false;
    // The loop then waits slowPollIntervalMs (or a webhook) before it polls again.
    if (isUnknownAtBank(poll.error)) {
      unknownAtBank();
      return true;
    }
    app.readFailed();
    log.error('Polling activity failed; polling starts again later', {
      ...logIds(),
      failureType: failureType(poll.error),
      error: poll.error instanceof Error ? poll.error.message : 'unknown',
    });
    return true;
  }

  async function create(): Promise<void> {
    try {
      const created = await bank('Create the application at the bank').createApplication({
        merchantId,
        merchantReference,
        application: input.application,
      });
      const change = app.created(created, new Date());
      workflowMetrics.applicationStarted();
      upsertSearchAttributes([{ key: FinanceApplicationId, value: created.financeApplicationId }]);
      log.info('Finance application created', logIds());
      if (change) changed(change);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const type = failureType(err);
      const rejected = type === BankFailureType.Rejected || type === 'InvalidApplicationRequest';
      createFailure = ApplicationFailure.create({
        type: rejected ? FinanceApplicationFailureType.CreateRejected : FinanceApplicationFailureType.CreateFailed,
        message: `The bank did not create the finance application: ${rootMessage(err)}`,
        nonRetryable: true,
        details: [{ merchantReference, bankFailureType: type }],
      });
      workflowMetrics.applicationFinished(rejected ? 'create_rejected' : 'create_failed', 'none');
      log.error('Finance application not created', { merchantReference, bankFailureType: type });
      throw createFailure;
    }
  }

  /** Why the worker refuses the callback URL (a non-retryable failure to end the run with), or undefined. */
  async function callbackRefusal(url: string): Promise<ApplicationFailure | undefined> {
    let verdict;
    try {
      verdict = await checkCallbackUrl({ url, merchantId });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return ApplicationFailure.create({
        type: FinanceApplicationFailureType.CreateFailed,
        message: `The callback URL could not be checked: ${rootMessage(err)}`,
        nonRetryable: true,
        details: [{ merchantReference }],
      });
    }
    if (verdict.allowed) return undefined;
    log.error('Merchant callback URL not allowed: the application is not created', {
      merchantReference,
      callbackOrigin: verdict.origin,
      reason: verdict.reason,
    });
    return ApplicationFailure.create({
      type: FinanceApplicationFailureType.CallbackUrlNotAllowed,
      message: `The finance application was not created: ${verdict.reason}`,
      nonRetryable: true,
      details: [{ merchantReference, callbackOrigin: verdict.origin ?? null, reason: verdict.reason }],
    });
  }

  /**
   * One read on the bank-reads queue (after a webhook). Never fatal: the poll or the next webhook reads again.
   * `announcedAt`: workflow time of the first webhook that asked for it (the delay metric).
   */
  async function readStatus(source: StatusSource, announcedAt?: number): Promise<void> {
    try {
      const read: StatusRead = await reads(`Read status (${source})`, merchantId).getApplicationStatus({
        financeApplicationId: state.financeApplicationId!,
        merchantReference,
        source: source === 'webhook' ? 'webhook' : 'poll',
      });
      const change = app.read(read.status, source, learnedAt(now(), read.readAt), read.webhooksKnown);
      knownAgain();
      if (change) changed(change, announcedAt);
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (isUnknownAtBank(err)) unknownAtBank();
      else readFailed(err, source);
    }
  }

  /** A failed read that is the bank's 404 on our application (runs from before the patch: a failed read as any). */
  function isUnknownAtBank(err: unknown): boolean {
    return failureType(err) === BankFailureType.ApplicationUnknown && patched(UNKNOWN_AT_BANK_PATCH);
  }

  /** A 404 on our application's status: reported once per run of 404s (search attribute, metric, log, Web UI). */
  function unknownAtBank(): void {
    if (!app.unknownAtBank(now())) return;
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: UNKNOWN_AT_BANK_STATUS }]);
    workflowMetrics.unknownAtBank();
    log.error('The bank no longer knows this application (404 on its status read); polling slows to the safety net', {
      ...logIds(),
      lastKnownStatus: state.status,
    });
    describe();
  }

  /** A status read succeeded after 404s: the search attribute shows the bank's status again. */
  function knownAgain(): void {
    if (!app.knownAgain()) return;
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: app.searchStatus() }]);
    log.info('The bank knows this application again', logIds());
    describe();
  }

  /** The read of runs from before the poll policy (main task queue, as their histories have it). */
  async function legacyReadStatus(source: StatusSource, announcedAt?: number): Promise<void> {
    try {
      const read = await bank(`Read status (${source})`).getApplicationStatus({
        financeApplicationId: state.financeApplicationId!,
        merchantReference,
      });
      const change = app.read(read.status, source, new Date());
      if (change) changed(change, announcedAt);
    } catch (err) {
      if (isCancellation(err)) throw err;
      readFailed(err, source);
    }
  }

  function readFailed(err: unknown, source: StatusSource): void {
    app.readFailed();
    const type = failureType(err);
    const level = type === BankFailureType.Unavailable || type === BankFailureType.RateLimited ? 'warn' : 'error';
    log[level]('Status read failed; retrying at the next poll', { ...logIds(), source, bankFailureType: type });
  }

  /**
   * Each other financeApplicationId there is room to check (OTHER_ID_LIMITS) is read at the bank, at once: an answer
   * confirms a duplicate (reported as before), a 404 marks it invented, a failure leaves it unchecked. Whatever is
   * not confirmed is only counted and logged once per run (unconfirmedCounted).
   */
  async function confirmOtherIds(ids: string[]): Promise<void> {
    const verdicts = await Promise.all(ids.map(confirmOtherId));
    const found = ids.filter((id, i) => verdicts[i] === 'found' && app.otherIdFound(id));
    ids.forEach((id, i) => {
      if (verdicts[i] === 'not_found') app.otherIdNotFound(id);
      else if (verdicts[i] === 'failed') app.otherIdReadFailed(id);
    });
    duplicatesFound(found);
  }

  async function confirmOtherId(id: string): Promise<'found' | 'not_found' | 'failed'> {
    try {
      // No `source`: a webhook naming another id is no evidence that webhooks reach us.
      await confirmations(merchantId).getApplicationStatus({ financeApplicationId: id, merchantReference });
      return 'found';
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (failureType(err) === BankFailureType.ApplicationUnknown) return 'not_found';
      log.warn('Could not confirm another financeApplicationId at the bank; its webhooks are counted, not reported', {
        ...logIds(),
        bankFailureType: failureType(err),
      });
      return 'failed';
    }
  }

  /**
   * Webhooks naming an id the bank did not confirm: a metric, one log line per run, nothing to the merchant. Not in a
   * task that continues as new (`atEnd` aside): the server refuses it when signals came meanwhile (a flood does that
   * often), the worker runs it again, and the metric would count twice; the next run emits what was carried.
   */
  function unconfirmedCounted(atEnd = false): void {
    if (!atEnd && shouldContinueAsNew()) return;
    const unconfirmed = app.takeUnconfirmed();
    if (!unconfirmed) return;
    const counter = inventedCounter();
    if (unconfirmed.notFound > 0) counter.add(unconfirmed.notFound, { verdict: 'not_found' });
    if (unconfirmed.unchecked > 0) counter.add(unconfirmed.unchecked, { verdict: 'unchecked' });
    if (!unconfirmed.firstInRun) return;
    log.warn('Webhooks naming another financeApplicationId the bank did not confirm: counted, not reported', {
      ...logIds(),
      ...state.otherIds,
      limits: OTHER_ID_LIMITS,
    });
    // Once per run too (a flood makes one batch per signal): later changes refresh the details with the counts.
    describe();
  }

  /** Another application at the bank for this reference: visible to operators, counted, told to the merchant. */
  function duplicatesFound(ids: string[]): void {
    if (ids.length === 0) return;
    upsertSearchAttributes([{ key: DuplicateFinanceApplicationId, value: state.duplicateApplicationIds![0]! }]);
    duplicateCounter().add(ids.length);
    log.warn('Duplicate application at the bank for this reference (a retried create); it is not followed', {
      ...logIds(),
      duplicateFinanceApplicationIds: ids,
    });
    describe();
  }

  /** A recorded change: the search attribute, a log line, the Web UI's details and the metrics follow it. */
  function changed(change: StatusChange, announcedAt?: number): void {
    workflowMetrics.statusChanged(change.source);
    // Found by polling with no webhook of ours waiting to be read: the bank did not announce it (yet).
    if (change.source === 'poll' && !app.hasWebhooks()) workflowMetrics.unannouncedChange(state.webhooksLive);
    if (announcedAt !== undefined) workflowMetrics.webhookDelay((now() - announcedAt) / 1000);
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: change.status }]);
    log.info('Finance application status changed', { ...logIds(), status: change.status, source: change.source });
    describe();
  }

  /** Before the run ends or continues as new: waiting status waits answer `closing`, then every handler is done. */
  async function handlersFinished(): Promise<void> {
    closing = true;
    await condition(allHandlersFinished);
  }

  function shouldContinueAsNew(): boolean {
    return continueAsNewReason(workflowInfo(), settings.continueAsNewAfterEvents) !== undefined;
  }

  /** A new Current Version of the deployment: the loop's top continues as new onto it (continue-as-new.ts). */
  function newVersion(): boolean {
    return workflowInfo().targetWorkerDeploymentVersionChanged;
  }

  async function runNotifier(url: string): Promise<void> {
    for (;;) {
      await condition(
        () =>
          app.nextNotification() !== undefined || app.nextDuplicateReport() !== undefined || notifierStop !== undefined,
      );
      if (notifierStop === 'now') return;
      const duplicate = app.nextNotification() === undefined ? app.nextDuplicateReport() : undefined;
      if (duplicate !== undefined) {
        await reportDuplicate(url, duplicate);
        continue;
      }
      const change = app.nextNotification();
      if (change === undefined) return;
      let delivered = false;
      try {
        await merchant(`Notify merchant: ${change.status}`).notifyMerchant({
          merchantId,
          url,
          idempotencyKey: `${workflowInfo().workflowId}:${change.status}`,
          event: {
            type: 'finance-application.status-changed',
            merchantReference,
            financeApplicationId: state.financeApplicationId,
            ...change,
          },
        });
        delivered = true;
      } catch (err) {
        if (isCancellation(err)) throw err;
        log.warn('Merchant callback gave up', { ...logIds(), status: change.status, failureType: failureType(err) });
      }
      app.notificationDone(delivered);
    }
  }

  async function reportDuplicate(url: string, duplicateFinanceApplicationId: string): Promise<void> {
    let delivered = false;
    try {
      await merchant('Notify merchant: duplicate application').notifyMerchant({
        merchantId,
        url,
        idempotencyKey: `${workflowInfo().workflowId}:duplicate:${duplicateFinanceApplicationId}`,
        event: {
          type: 'finance-application.duplicate-detected',
          merchantReference,
          financeApplicationId: state.financeApplicationId,
          duplicateFinanceApplicationId,
          at: new Date().toISOString(),
        },
      });
      delivered = true;
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('Merchant callback gave up', {
        ...logIds(),
        duplicateFinanceApplicationId,
        failureType: failureType(err),
      });
    }
    app.duplicateReportDone(delivered);
  }

  /** The final status as a label: bounded to the statuses the settings know (the bank's set is not shown). */
  function statusLabel(status: string | undefined): string {
    if (status === undefined) return 'none';
    return status in settings.statusOrder || settings.terminalStatuses.includes(status) ? status : OTHER_STATUS;
  }

  function logIds(): Record<string, unknown> {
    return { merchantId, merchantReference, financeApplicationId: state.financeApplicationId };
  }

  function describe(): void {
    setCurrentDetails(app.details());
  }
}

/** One running polling activity and what it came back with. */
interface Poll {
  scope: CancellationScope;
  /** pollKey() when it started. */
  since: string;
  settled: boolean;
  read?: StatusRead;
  error?: unknown;
}

/** Duplicate applications found (the SDK's workflow metric: replay-safe, exported with the worker's metrics). */
const duplicateCounter = () =>
  metricMeter.createCounter(
    WorkflowMetric.duplicatesDetected,
    '{application}',
    'Other applications the bank created for one merchant reference (a retried ambiguous create)',
  );

/** Webhooks naming another financeApplicationId that the bank did not confirm (replay-safe, as above). */
const inventedCounter = () =>
  metricMeter.createCounter(
    WorkflowMetric.inventedApplicationIds,
    '{webhook}',
    'Status webhooks naming another financeApplicationId the bank did not confirm, by verdict (not_found | unchecked)',
  );

/** The `ApplicationFailure.type` behind an activity failure (workflows branch on it, never on classes of ours). */
function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/** An activity that ended because we cancelled it (TRY_CANCEL reports it as an ActivityFailure). */
function isCancelledActivity(err: unknown): boolean {
  return err instanceof ActivityFailure && isCancellation(err.cause);
}

function rootMessage(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}
