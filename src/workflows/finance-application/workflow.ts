import {
  ApplicationFailure,
  condition,
  log,
  makeContinueAsNewFunc,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  FinanceApplicationFailureType,
  financeApplicationStateQuery,
  financeApplicationStatusChangedSignal,
  startFinanceApplicationUpdate,
  waitForStatusChangeUpdate,
  type FinanceApplicationInput,
  type FinanceApplicationState,
  type StatusWaitRequest,
} from '../../shared/finance-application';
import { MerchantReference } from '../../shared/search-attributes';
import { upgradeCheckSignal } from '../../shared/versioning';
import { workflowMetrics } from '../metrics';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { readFinanceSnapshot } from '../snapshots';
import { now } from './proxies';
import { Creation, validateStartRequest } from './creation';
import { timerSummaries } from './details';
import { Duplicates } from './duplicates';
import { MerchantNotifier } from './merchant-notification';
import { Polling } from './polling';
import { Reporter } from './reporting';
import { FinanceApplication, resolveSettings } from './state';
import { StatusWaits } from './status-waits';

/**
 * One finance application, from creation to a terminal status or the deadline.
 * Started with update-with-start: the start update resolves with the bank's create response. Webhooks arrive as
 * signals and trigger one read each (a burst coalesces); between them one polling activity, whose retries Temporal
 * schedules by the poll policy, is the fallback. Handlers only record; the decisions are FinanceApplication's
 * (state.ts), the steps are the modules beside this file (samples-typescript `safe-message-handlers`).
 */
export async function financeApplicationWorkflow(input: FinanceApplicationInput): Promise<FinanceApplicationState> {
  const { settings, problems } = resolveSettings(input.settings);
  if (problems.length > 0) {
    throw ApplicationFailure.nonRetryable(problems.join('; '), FinanceApplicationFailureType.InvalidInput);
  }
  const { merchantId, merchantReference, callbackUrl } = input;
  const app = new FinanceApplication(merchantReference, settings, {
    now: now(),
    // Read by this build's schema reader: any version it knows or a newer one (snapshots.ts).
    carried: input.carried === undefined ? undefined : readFinanceSnapshot(input.carried),
    notifies: callbackUrl !== undefined,
  });
  const state = app.state;
  const report = new Reporter(app, merchantId);
  const creation = new Creation(app, report, input);
  const waits = new StatusWaits(state);
  const continuesAsNew = () => continueAsNewReason(workflowInfo(), settings.continueAsNewAfterEvents) !== undefined;
  // A new Current Version of the deployment: the loop's top continues as new onto it (continue-as-new.ts).
  const newVersion = () => workflowInfo().targetWorkerDeploymentVersionChanged;
  const duplicates = new Duplicates(app, report, merchantId, continuesAsNew);

  // Handlers first, before any await, so an update or signal delivered with the start finds them.
  setHandlers(app, creation, waits);

  upsertSearchAttributes([{ key: MerchantReference, value: merchantReference }]);

  // A callback URL outside the allow-list fails the run (and the start update: a 400 at the facade) before anything
  // reaches the bank. Continued runs skip it: their application exists (notifyMerchant checks again).
  if (callbackUrl !== undefined && !state.bank) {
    const refusal = await creation.callbackRefusal(callbackUrl);
    if (refusal) {
      workflowMetrics.applicationFinished('callback_refused', 'none');
      await waits.finishHandlers();
      throw refusal;
    }
  }

  // Merchant callbacks run beside the main loop, in order, so a slow merchant never delays status tracking.
  const notifier = new MerchantNotifier(app, report, merchantId, callbackUrl);

  if (!state.bank) {
    try {
      await creation.create();
    } catch (err) {
      await notifier.stopNow();
      await waits.finishHandlers();
      throw err;
    }
  }

  const continued = await followWebhooksAndPoll();
  if (continued) return continued;

  return await finishRun({ app, report, duplicates, notifier, waits, settings });

  /**
   * Each batch of webhooks triggers one read; beside it one polling activity runs, started again when what it
   * was started from changed (the old one is cancelled without waiting, off the webhook's path). One deadline
   * timer per run. Returns the continue-as-new result, or undefined when done.
   */
  async function followWebhooksAndPoll(): Promise<FinanceApplicationState | undefined> {
    let deadlinePassed = now() >= app.deadline();
    if (!deadlinePassed) {
      const ms = app.deadline() - now();
      // A summary is the timer's metadata, not part of its command: recorded histories replay (test/replay).
      void sleep(ms, { summary: timerSummaries.deadline(state.deadlineAt, ms) }).then(() => (deadlinePassed = true));
    }
    const polling = new Polling(app, report, merchantId);
    report.describe();
    for (;;) {
      const end = app.endsNow(now(), deadlinePassed);
      if (end) {
        report.stopFollowing(end);
        break;
      }
      if (polling.settled()) {
        // A poll that failed outright (not a bank error: those are retried inside it) starts again later.
        if (polling.takeSettled())
          await condition(() => app.hasWebhooks() || deadlinePassed || newVersion(), settings.slowPollIntervalMs, {
            summary: timerSummaries.pollAgainAfterFailure(settings.slowPollIntervalMs),
          });
        continue;
      }
      if (continuesAsNew()) {
        polling.stop();
        return await continueAsNew();
      }
      if (app.hasWebhooks()) {
        const taken = app.takeWebhooks();
        // Our own status first; then the few other ids there is room to read (none most of the time).
        if (taken.ours > 0) await polling.readStatus('webhook', taken.since);
        await duplicates.confirmWaiting();
        continue;
      }
      const poll = polling.running();
      await condition(() => app.hasWebhooks() || poll.settled || deadlinePassed || newVersion());
    }
    polling.stop();
    return undefined;
  }

  /** At the loop's safe point (continue-as-new.ts): callbacks and handlers first, then the snapshot moves on. */
  async function continueAsNew(): Promise<FinanceApplicationState> {
    await notifier.stopNow();
    await waits.finishHandlers();
    log.info('Continuing as new', {
      ...report.ids(),
      reason: continueAsNewReason(workflowInfo(), settings.continueAsNewAfterEvents),
      historyLength: workflowInfo().historyLength,
    });
    // Onto the deployment's target version: a new build's run starts from this snapshot (continue-as-new.ts).
    return await makeContinueAsNewFunc<typeof financeApplicationWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
      ...input,
      carried: app.snapshot(),
    });
  }
}

/** The run's signal, query and update handlers; they only record (the loop decides). */
function setHandlers(app: FinanceApplication, creation: Creation, waits: StatusWaits): void {
  setHandler(financeApplicationStatusChangedSignal, ({ financeApplicationId }) =>
    app.receiveWebhook(financeApplicationId, now()),
  );
  setHandler(financeApplicationStateQuery, () => app.state);
  // The deploy procedure's nudge: its workflow task is what shows a sleeping run the new version (versioning.ts).
  setHandler(upgradeCheckSignal, () => undefined);
  setHandler(startFinanceApplicationUpdate, ({ requestId }) => creation.started(requestId), {
    validator: validateStartRequest,
  });
  setHandler(waitForStatusChangeUpdate, (request) => waits.wait(request), {
    validator: (arg: Partial<StatusWaitRequest> | undefined) => waits.validate(arg),
  });
}

/** The run's end: unconfirmed duplicates counted, the final status shown, then callbacks and handlers drained. */
async function finishRun(run: {
  app: FinanceApplication;
  report: Reporter;
  duplicates: Duplicates;
  notifier: MerchantNotifier;
  waits: StatusWaits;
  settings: ReturnType<typeof resolveSettings>['settings'];
}): Promise<FinanceApplicationState> {
  const { state } = run.app;
  run.duplicates.countUnconfirmed(true);
  run.report.showFinalStatus();
  await run.notifier.drain();
  await run.waits.finishHandlers();
  run.report.countFinished(state, run.settings);
  log.info('Finance application finished', { ...run.report.ids(), outcome: state.outcome, status: state.status });
  return state;
}
