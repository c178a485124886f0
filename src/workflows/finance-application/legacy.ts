import { condition, isCancellation, log } from '@temporalio/workflow';
import type { FinanceApplicationState, StatusSource } from '../../shared/finance-application';
import { bank, now } from './proxies';
import { timerSummaries } from './details';
import type { Duplicates } from './duplicates';
import type { Polling } from './polling';
import type { Reporter } from './reporting';
import type { TakenWebhooks } from './webhook-ids';
import type { FinanceApplication } from './state';

/**
 * The code of runs recorded before a patch (patches.ts), unchanged so their histories replay; no new run takes it.
 * Delete a branch only once no run that took it can be open (its deadline passed since the patch shipped) and its
 * histories are removed from test/histories.
 */

/**
 * A batch of webhooks in runs from before CONFIRM_DUPLICATES_PATCH: other ids are reported unread
 * (DUPLICATES_PATCH) or, before that, only logged; then our own status is read.
 */
export async function unconfirmedWebhookBatch(
  taken: TakenWebhooks,
  reportDuplicates: boolean,
  ctx: { app: FinanceApplication; report: Reporter; duplicates: Duplicates; polling: Polling },
): Promise<void> {
  const { app, report, duplicates, polling } = ctx;
  if (reportDuplicates) duplicates.found(app.duplicatesSeen(app.otherIdsToConfirm()));
  else if (taken.mismatched > 0)
    log.warn('Webhook for another financeApplicationId ignored', { ...report.ids(), ignored: taken.mismatched });
  if (taken.ours > 0) await polling.readStatus('webhook', taken.since);
}

/**
 * Runs from before POLL_POLICY_PATCH: a timer per poll (30 s until the application's own first webhook, then the
 * slow interval) and reads on the main task queue. Returns the continue-as-new result, or undefined when done.
 */
export async function timerLoop(ctx: {
  app: FinanceApplication;
  report: Reporter;
  continuesAsNew: () => boolean;
  newVersion: () => boolean;
  continueAsNew: () => Promise<FinanceApplicationState>;
}): Promise<FinanceApplicationState | undefined> {
  const { app, report } = ctx;
  let nextPollAt = now() + app.legacyPollIntervalMs();
  app.nextPollAt = nextPollAt;
  report.describe();
  while (!app.state.done) {
    if (app.isTerminal()) {
      report.finish('terminal');
      break;
    }
    const deadlineAt = app.deadline();
    if (now() >= deadlineAt) {
      report.finish('deadline');
      break;
    }
    if (ctx.continuesAsNew()) return await ctx.continueAsNew();

    const wait = Math.min(nextPollAt, deadlineAt) - now();
    const summary = timerSummaries.legacyPoll(wait, deadlineAt < nextPollAt);
    const woke =
      wait > 0 ? await condition(() => app.hasWebhooks() || ctx.newVersion(), wait, { summary }) : app.hasWebhooks();
    let source: StatusSource;
    let announcedAt: number | undefined;
    if (woke) {
      const { ours, mismatched, since } = app.takeWebhooks();
      if (mismatched > 0)
        log.warn('Webhook for another financeApplicationId ignored', { ...report.ids(), ignored: mismatched });
      if (ours === 0) continue;
      source = 'webhook';
      announcedAt = since;
    } else if (now() >= nextPollAt) {
      source = 'poll';
    } else {
      continue; // the deadline timer fired: the loop's top ends the workflow
    }
    await readStatus(ctx, source, announcedAt);
    nextPollAt = now() + app.legacyPollIntervalMs();
    app.nextPollAt = nextPollAt;
  }
  return undefined;
}

/** The read of runs from before the poll policy (main task queue, as their histories have it). */
async function readStatus(
  { app, report }: { app: FinanceApplication; report: Reporter },
  source: StatusSource,
  announcedAt?: number,
): Promise<void> {
  try {
    const read = await bank(`Read status (${source})`).getApplicationStatus({
      financeApplicationId: app.state.financeApplicationId!,
      merchantReference: app.merchantReference,
    });
    const change = app.read(read.status, source, new Date());
    if (change) report.changed(change, announcedAt);
  } catch (err) {
    if (isCancellation(err)) throw err;
    report.readFailed(err, source);
  }
}
