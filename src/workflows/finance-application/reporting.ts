import { log, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { BankFailureType } from '../../shared/failure-types';
import {
  UNKNOWN_AT_BANK_STATUS,
  type FinanceApplicationState,
  type StatusChange,
  type StatusSource,
} from '../../shared/finance-application';
import { OTHER_STATUS } from '../../shared/metric-names';
import { FinanceApplicationStatus } from '../../shared/search-attributes';
import { workflowMetrics } from '../metrics';
import { now } from './proxies';
import { failureType } from './failures';
import type { FinanceApplication, ResolvedSettings } from './state';

/**
 * What operators see of one application: the FinanceApplicationStatus search attribute, log lines, metrics and the
 * Web UI's current details. The decisions are the FinanceApplication's (state.ts); this tells them.
 */
export class Reporter {
  constructor(
    private readonly app: FinanceApplication,
    private readonly merchantId: string,
  ) {}

  /** Every log line carries the merchant and the bank's id. */
  ids(): Record<string, unknown> {
    const { merchantReference, financeApplicationId } = this.app.state;
    return { merchantId: this.merchantId, merchantReference, financeApplicationId };
  }

  /** The Web UI's current details (details.ts): set at every change of what they show. */
  describe(): void {
    setCurrentDetails(this.app.details(now()));
  }

  /** A recorded change: the search attribute, a log line, the Web UI's details and the metrics follow it. */
  changed(change: StatusChange, announcedAt?: number): void {
    workflowMetrics.statusChanged(change.source);
    // Found by polling with no webhook of ours waiting to be read: the bank did not announce it (yet).
    if (change.source === 'poll' && !this.app.hasWebhooks())
      workflowMetrics.unannouncedChange(this.app.state.webhooksLive);
    if (announcedAt !== undefined) workflowMetrics.webhookDelay((now() - announcedAt) / 1000);
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: change.status }]);
    log.info('Finance application status changed', { ...this.ids(), status: change.status, source: change.source });
    this.describe();
  }

  /** A 404 on our application's status: reported once per run of 404s (search attribute, metric, log, Web UI). */
  unknownAtBank(): void {
    if (!this.app.unknownAtBank(now())) return;
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: UNKNOWN_AT_BANK_STATUS }]);
    workflowMetrics.unknownAtBank();
    log.error('The bank no longer knows this application (404 on its status read); polling slows to the safety net', {
      ...this.ids(),
      lastKnownStatus: this.app.state.status,
    });
    this.describe();
  }

  /** A status read succeeded after 404s: the search attribute shows the bank's status again. */
  knownAgain(): void {
    if (!this.app.knownAgain()) return;
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: this.app.searchStatus() }]);
    log.info('The bank knows this application again', this.ids());
    this.describe();
  }

  /** A read that failed after its retries: counted, and logged at the level its cause deserves. */
  readFailed(err: unknown, source: StatusSource): void {
    this.app.readFailed();
    const type = failureType(err);
    const level = type === BankFailureType.Unavailable || type === BankFailureType.RateLimited ? 'warn' : 'error';
    log[level]('Status read failed; retrying at the next poll', { ...this.ids(), source, bankFailureType: type });
  }

  /** The application is no longer followed: why, in the state and (for the abnormal ends) a log line. */
  stopFollowing(outcome: 'terminal' | 'deadline' | 'unknown_at_bank'): void {
    this.app.finish(outcome);
    if (outcome === 'deadline') log.warn('Finance application deadline reached before a terminal status', this.ids());
    if (outcome === 'unknown_at_bank') {
      log.error('The bank has not known this application for a day: no longer followed', {
        ...this.ids(),
        unknownAtBank: this.app.state.unknownAtBank,
      });
    }
  }

  /** The run's last word on the application: the Web UI's details and the search attribute. */
  showFinalStatus(): void {
    this.describe();
    upsertSearchAttributes([{ key: FinanceApplicationStatus, value: this.app.searchStatus() }]);
  }

  /** The applications-finished metric, by outcome and final status. */
  countFinished(state: FinanceApplicationState, settings: ResolvedSettings): void {
    workflowMetrics.applicationFinished(state.outcome ?? 'none', statusLabel(settings, state.status));
  }
}

/** The final status as a metric label: bounded to the statuses the settings know (the bank's set is not shown). */
export function statusLabel(settings: ResolvedSettings, status: string | undefined): string {
  if (status === undefined) return 'none';
  return status in settings.statusOrder || settings.terminalStatuses.includes(status) ? status : OTHER_STATUS;
}
