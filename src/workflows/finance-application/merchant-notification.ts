import { condition, isCancellation, log, workflowInfo } from '@temporalio/workflow';
import type { StatusChange } from '../../shared/finance-application';
import type { CallbackDelivery } from '../../shared/merchant-callbacks';
import { merchant } from './proxies';
import { failureType } from './failures';
import type { Reporter } from './reporting';
import type { FinanceApplication } from './state';
import { deliveredRecord, failedRecord, type CallbackSent } from './callback-deliveries';

/**
 * The merchant's callbacks run beside the main loop, in order (each status change, then any duplicate reported
 * after it), so a slow merchant never delays status tracking. The merchant dedupes on the idempotency key: the
 * workflow id and what the event is about, the same in every run of the application.
 */

/** The idempotency key of a status change's callback. */
export const statusCallbackKey = (workflowId: string, status: string): string => `${workflowId}:${status}`;

/** The idempotency key of a duplicate application's callback. */
export const duplicateCallbackKey = (workflowId: string, duplicateId: string): string =>
  `${workflowId}:duplicate:${duplicateId}`;

export class MerchantNotifier {
  /** `drain`: send what is queued, then end (the run ends); `now`: end after the callback in flight. */
  private stopping: 'drain' | 'now' | undefined;
  private readonly done: Promise<void>;

  /** Starts sending at once when there is a callback URL (nothing to send otherwise). */
  constructor(
    private readonly app: FinanceApplication,
    private readonly report: Reporter,
    private readonly merchantId: string,
    url: string | undefined,
  ) {
    this.done = url ? this.run(url) : Promise.resolve();
  }

  /** Before the run ends: every queued callback is sent. */
  async drain(): Promise<void> {
    this.stopping = 'drain';
    await this.done;
  }

  /** Before a failure or continue-as-new: what is queued is left (continue-as-new carries it to the next run). */
  async stopNow(): Promise<void> {
    this.stopping = 'now';
    await this.done;
  }

  private async run(url: string): Promise<void> {
    const { app } = this;
    for (;;) {
      await condition(
        () =>
          app.nextNotification() !== undefined ||
          app.nextDuplicateReport() !== undefined ||
          this.stopping !== undefined,
      );
      if (this.stopping === 'now') return;
      const duplicate = app.nextNotification() === undefined ? app.nextDuplicateReport() : undefined;
      if (duplicate !== undefined) {
        await this.reportDuplicate(url, duplicate);
        continue;
      }
      const change = app.nextNotification();
      if (change === undefined) return;
      await this.notifyChange(url, change);
    }
  }

  private async notifyChange(url: string, change: StatusChange): Promise<void> {
    const sent: CallbackSent = {
      idempotencyKey: statusCallbackKey(workflowInfo().workflowId, change.status),
      about: change.status,
      url,
      event: {
        type: 'finance-application.status-changed',
        merchantReference: this.app.merchantReference,
        financeApplicationId: this.app.state.financeApplicationId,
        ...change,
      },
    };
    const record = await this.deliver(`Notify merchant: ${change.status}`, sent, { status: change.status });
    this.app.notificationDone(record.outcome === 'delivered', record);
    this.report.describe();
  }

  private async reportDuplicate(url: string, duplicateFinanceApplicationId: string): Promise<void> {
    const sent: CallbackSent = {
      idempotencyKey: duplicateCallbackKey(workflowInfo().workflowId, duplicateFinanceApplicationId),
      about: `duplicate:${duplicateFinanceApplicationId}`,
      url,
      event: {
        type: 'finance-application.duplicate-detected',
        merchantReference: this.app.merchantReference,
        financeApplicationId: this.app.state.financeApplicationId,
        duplicateFinanceApplicationId,
        at: new Date().toISOString(),
      },
    };
    const record = await this.deliver('Notify merchant: duplicate application', sent, {
      duplicateFinanceApplicationId,
    });
    this.app.duplicateReportDone(record.outcome === 'delivered', record);
    this.report.describe();
  }

  /**
   * One callback through notifyMerchant, and the record of its outcome for the state (the console reads it). A
   * merchant that keeps failing is given up on: logged with `logFields`, counted by the caller. No command of its own:
   * the same activity as before, so recorded histories replay.
   */
  private async deliver(
    summary: string,
    sent: CallbackSent,
    logFields: Record<string, string>,
  ): Promise<CallbackDelivery> {
    // The Web UI's details say which callback is being sent, and its outcome once there is one.
    this.app.sendingCallback = sent.about;
    this.report.describe();
    try {
      const result = await merchant(summary).notifyMerchant({
        merchantId: this.merchantId,
        url: sent.url,
        idempotencyKey: sent.idempotencyKey,
        event: sent.event,
      });
      return deliveredRecord(sent, result, new Date().toISOString());
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('Merchant callback gave up', { ...this.report.ids(), ...logFields, failureType: failureType(err) });
      return failedRecord(sent, err, new Date().toISOString());
    } finally {
      this.app.sendingCallback = undefined;
    }
  }
}
