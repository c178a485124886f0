import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/types';
import { BankFailureType } from '../shared/failure-types';
import {
  FINANCE_APPLICATION_DEFAULTS,
  FinanceApplicationFailureType,
  financeApplicationStateQuery,
  financeApplicationStatusChangedSignal,
  startFinanceApplicationUpdate,
  type FinanceApplicationInput,
  type FinanceApplicationSettings,
  type FinanceApplicationStarted,
  type FinanceApplicationState,
  type StatusChange,
  type StatusSource,
} from '../shared/finance-application';
import { FinanceApplicationId, FinanceApplicationStatus, MerchantReference } from '../shared/search-attributes';
import { BANK_ACTIVITY_OPTIONS, MERCHANT_CALLBACK_ACTIVITY_OPTIONS } from './activity-options';

type ResolvedSettings = Required<Omit<FinanceApplicationSettings, 'continueAsNewAfterEvents'>> &
  Pick<FinanceApplicationSettings, 'continueAsNewAfterEvents'>;

// Workflow time (deterministic in the sandbox); Date.now is linted out of workflow code.
const now = (): number => new Date().getTime();

/** Activities with a summary the Web UI shows on the event (the proxy is cheap to build per call). */
const bank = (summary: string) => proxyActivities<Activities>({ ...BANK_ACTIVITY_OPTIONS, summary });
const merchant = (summary: string) => proxyActivities<Activities>({ ...MERCHANT_CALLBACK_ACTIVITY_OPTIONS, summary });

/**
 * One finance application, from creation to a terminal status or the deadline (DESIGN.md). Started with
 * update-with-start: the start update resolves with the bank's create response. Webhooks arrive as signals;
 * a fallback poll timer covers lost ones. Handlers only record; the body makes every bank call.
 */
export async function financeApplicationWorkflow(input: FinanceApplicationInput): Promise<FinanceApplicationState> {
  const settings = resolveSettings(input.settings);
  const { merchantReference } = input;
  const carried = input.carried;
  const state: FinanceApplicationState = carried
    ? { ...carried.state, runs: carried.state.runs + 1 }
    : {
        merchantReference,
        history: [],
        done: false,
        webhooksLive: false,
        webhooksReceived: 0,
        mismatchedWebhooks: 0,
        statusReads: 0,
        failedReads: 0,
        notificationsSent: 0,
        notificationsFailed: 0,
        deadlineAt: new Date(now() + settings.deadlineMs).toISOString(),
        runs: 1,
      };
  /** financeApplicationIds of webhooks not yet acted on: the signal handler appends, the body drains. */
  const webhookIds: string[] = [...(carried?.pendingWebhookIds ?? [])];
  /** Changes still to push to the merchant, oldest first. */
  const unsent: StatusChange[] = [...(carried?.unsentNotifications ?? [])];
  let createFailure: ApplicationFailure | undefined;

  // Handlers first, before any await, so an update or signal delivered with the start finds them.
  setHandler(financeApplicationStatusChangedSignal, ({ financeApplicationId }) => {
    state.webhooksReceived += 1;
    webhookIds.push(financeApplicationId);
  });
  setHandler(financeApplicationStateQuery, () => state);
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
          throw ApplicationFailure.nonRetryable('requestId must be a string', 'InvalidUpdate');
        }
      },
    },
  );

  upsertSearchAttributes([{ key: MerchantReference, value: merchantReference }]);

  // Merchant callbacks run beside the main loop, in order, so a slow merchant never delays status tracking.
  let notifierStop: 'drain' | 'now' | undefined;
  const notifierDone = input.callbackUrl ? runNotifier(input.callbackUrl) : Promise.resolve();

  if (!state.bank) {
    try {
      await create();
    } catch (err) {
      notifierStop = 'now';
      await notifierDone;
      await condition(allHandlersFinished);
      throw err;
    }
  }
  let nextPollAt = now() + pollInterval();
  describe();

  while (!state.done) {
    if (state.status !== undefined && settings.terminalStatuses.includes(state.status)) {
      state.done = true;
      state.outcome = 'terminal';
      break;
    }
    const deadlineAt = Date.parse(state.deadlineAt);
    if (now() >= deadlineAt) {
      state.done = true;
      state.outcome = 'deadline';
      log.warn('Finance application deadline reached before a terminal status', logIds());
      break;
    }
    if (shouldContinueAsNew()) {
      notifierStop = 'now';
      await notifierDone;
      await condition(allHandlersFinished);
      log.info('Continuing as new', { ...logIds(), historyLength: workflowInfo().historyLength });
      return await continueAsNew<typeof financeApplicationWorkflow>({
        ...input,
        carried: { state, unsentNotifications: unsent, pendingWebhookIds: webhookIds },
      });
    }

    const wait = Math.min(nextPollAt, deadlineAt) - now();
    const woke = wait > 0 ? await condition(() => webhookIds.length > 0, wait) : webhookIds.length > 0;
    let source: StatusSource;
    if (woke) {
      // Every webhook received so far is answered by one read (a burst coalesces).
      const ids = webhookIds.splice(0);
      const ours = ids.filter((id) => id === state.financeApplicationId).length;
      if (ours < ids.length) {
        state.mismatchedWebhooks += ids.length - ours;
        log.warn('Webhook for another financeApplicationId ignored', { ...logIds(), ignored: ids.length - ours });
      }
      if (ours === 0) continue;
      if (!state.webhooksLive) log.info('First webhook received: webhooks are live, polling slows down', logIds());
      state.webhooksLive = true;
      source = 'webhook';
    } else if (now() >= nextPollAt) {
      source = 'poll';
    } else {
      continue; // the deadline timer fired: the loop's top ends the workflow
    }
    await readStatus(source);
    nextPollAt = now() + pollInterval();
  }

  describe();
  upsertSearchAttributes([{ key: FinanceApplicationStatus, value: state.status ?? 'UNKNOWN' }]);
  notifierStop = 'drain';
  await notifierDone;
  await condition(allHandlersFinished);
  log.info('Finance application finished', { ...logIds(), outcome: state.outcome, status: state.status });
  return state;

  async function create(): Promise<void> {
    try {
      const created = await bank('Create the application at the bank').createApplication({
        merchantReference,
        application: input.application,
      });
      state.bank = created;
      state.financeApplicationId = created.financeApplicationId;
      upsertSearchAttributes([{ key: FinanceApplicationId, value: created.financeApplicationId }]);
      log.info('Finance application created', logIds());
      if (typeof created.status === 'string') record(created.status, 'create');
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
      log.error('Finance application not created', { merchantReference, bankFailureType: type });
      throw createFailure;
    }
  }

  async function readStatus(source: StatusSource): Promise<void> {
    const financeApplicationId = state.financeApplicationId!;
    state.statusReads += 1;
    try {
      const read = await bank(`Read status (${source})`).getApplicationStatus({
        financeApplicationId,
        merchantReference,
      });
      record(read.status, source);
    } catch (err) {
      if (isCancellation(err)) throw err;
      state.failedReads += 1;
      // Never fatal: the application exists, and the next poll or webhook reads again.
      const type = failureType(err);
      const level = type === BankFailureType.Unavailable || type === BankFailureType.RateLimited ? 'warn' : 'error';
      log[level]('Status read failed; retrying at the next poll', { ...logIds(), source, bankFailureType: type });
    }
  }

  /** Records `status` once, if it moves forward; a stale or repeated read changes nothing. */
  function record(status: string, source: StatusSource): void {
    if (!advances(status)) return;
    const change: StatusChange = { status, at: new Date().toISOString(), source };
    state.history.push(change);
    state.status = status;
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: status }]);
    if (input.callbackUrl) unsent.push(change);
    log.info('Finance application status changed', { ...logIds(), status, source });
    describe();
  }

  function advances(next: string): boolean {
    const current = state.status;
    if (current === undefined) return true;
    if (next === current) return false;
    const from = settings.statusOrder[current];
    const to = settings.statusOrder[next];
    if (from !== undefined && to !== undefined) return to > from;
    // A status outside the order: taken once, never again after something else (that would be going back).
    return !state.history.some((h) => h.status === next);
  }

  function pollInterval(): number {
    return state.webhooksLive ? settings.slowPollIntervalMs : settings.fastPollIntervalMs;
  }

  function shouldContinueAsNew(): boolean {
    const info = workflowInfo();
    const limit = settings.continueAsNewAfterEvents;
    return info.continueAsNewSuggested || (limit !== undefined && info.historyLength >= limit);
  }

  async function runNotifier(url: string): Promise<void> {
    for (;;) {
      await condition(() => unsent.length > 0 || notifierStop !== undefined);
      if (unsent.length === 0 || notifierStop === 'now') return;
      const change = unsent[0]!;
      try {
        await merchant(`Notify merchant: ${change.status}`).notifyMerchant({
          url,
          idempotencyKey: `${workflowInfo().workflowId}:${change.status}`,
          event: {
            type: 'finance-application.status-changed',
            merchantReference,
            financeApplicationId: state.financeApplicationId,
            ...change,
          },
        });
        state.notificationsSent += 1;
      } catch (err) {
        if (isCancellation(err)) throw err;
        state.notificationsFailed += 1;
        log.warn('Merchant callback gave up', { ...logIds(), status: change.status, failureType: failureType(err) });
      }
      unsent.shift();
    }
  }

  function logIds(): Record<string, unknown> {
    return { merchantReference, financeApplicationId: state.financeApplicationId };
  }

  /** Current details in the Web UI: the status timeline as a markdown table. */
  function describe(): void {
    const rows = state.history.slice(-20).map((h) => `| ${h.status} | ${h.at} | ${h.source} |`);
    const mode = state.webhooksLive ? 'webhooks live, slow safety-net polling' : 'polling until the first webhook';
    const head = state.done
      ? `**${state.status ?? 'UNKNOWN'}**, finished (${state.outcome})`
      : `**${state.status ?? 'creating'}**, ${mode}`;
    setCurrentDetails(
      [
        head,
        `Application \`${state.financeApplicationId ?? '-'}\` · webhooks ${state.webhooksReceived} · reads ${state.statusReads}`,
        '',
        '| status | at | source |',
        '|---|---|---|',
        ...rows,
      ].join('\n'),
    );
  }
}

function resolveSettings(s: FinanceApplicationSettings = {}): ResolvedSettings {
  const resolved: ResolvedSettings = {
    fastPollIntervalMs: s.fastPollIntervalMs ?? FINANCE_APPLICATION_DEFAULTS.fastPollIntervalMs,
    slowPollIntervalMs: s.slowPollIntervalMs ?? FINANCE_APPLICATION_DEFAULTS.slowPollIntervalMs,
    deadlineMs: s.deadlineMs ?? FINANCE_APPLICATION_DEFAULTS.deadlineMs,
    terminalStatuses: s.terminalStatuses ?? FINANCE_APPLICATION_DEFAULTS.terminalStatuses,
    statusOrder: s.statusOrder ?? FINANCE_APPLICATION_DEFAULTS.statusOrder,
    continueAsNewAfterEvents: s.continueAsNewAfterEvents,
  };
  for (const key of ['fastPollIntervalMs', 'slowPollIntervalMs', 'deadlineMs'] as const) {
    if (!(resolved[key] > 0)) {
      throw ApplicationFailure.nonRetryable(
        `settings.${key} must be a positive number`,
        'InvalidFinanceApplicationInput',
      );
    }
  }
  return resolved;
}

/** The `ApplicationFailure.type` behind an activity failure (workflows branch on it, never on classes of ours). */
function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

function rootMessage(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}
