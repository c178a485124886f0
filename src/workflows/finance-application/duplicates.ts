import { isCancellation, log, metricMeter, upsertSearchAttributes } from '@temporalio/workflow';
import { BankFailureType, NOT_THIS_REFERENCES } from '../../shared/failure-types';
import { WorkflowMetric } from '../../shared/metric-names';
import { DuplicateFinanceApplicationId } from '../../shared/search-attributes';
import { confirmations } from './proxies';
import { failureType } from './failures';
import type { Reporter } from './reporting';
import type { FinanceApplication } from './state';
import { OTHER_ID_LIMITS } from './webhook-ids';

/**
 * Webhooks naming another financeApplicationId: a second application the bank created for our reference (an
 * ambiguous create, retried), or an invented id. The bookkeeping is bounded and pure (webhook-ids.ts); this reads
 * the few ids there is room for at the bank and tells operators and the merchant what it found.
 */

/** What a confirmation read of another id said. */
export type Verdict = 'found' | 'not_found' | 'failed';

/**
 * A confirmation read's failure: a 404 means the id is invented, another application of ours (another merchant's or
 * another reference's: the activity's NOT_THIS_REFERENCES) is no duplicate either; anything else leaves it unchecked.
 */
export const verdictOf = (err: unknown): Verdict => {
  const type = failureType(err);
  return type === BankFailureType.ApplicationUnknown || type === NOT_THIS_REFERENCES ? 'not_found' : 'failed';
};

export class Duplicates {
  constructor(
    private readonly app: FinanceApplication,
    private readonly report: Reporter,
    private readonly merchantId: string,
    /** Whether this workflow task continues as new (then nothing is counted in it: countUnconfirmed). */
    private readonly continuesAsNew: () => boolean,
  ) {}

  /** After a batch of webhooks: the other ids there is room to read (none most of the time), then the counts. */
  async confirmWaiting(): Promise<void> {
    const others = this.app.otherIdsToConfirm();
    if (others.length > 0) await this.confirm(others);
    this.countUnconfirmed();
  }

  /**
   * Each id is read at the bank, at once: an answer confirms a duplicate (reported), a 404 marks it invented, a
   * failure leaves it unchecked. Whatever is not confirmed is only counted and logged once per run.
   */
  private async confirm(ids: string[]): Promise<void> {
    const verdicts = await Promise.all(ids.map((id) => this.confirmOne(id)));
    const found = ids.filter((id, i) => verdicts[i] === 'found' && this.app.otherIdFound(id));
    ids.forEach((id, i) => {
      if (verdicts[i] === 'not_found') this.app.otherIdNotFound(id);
      else if (verdicts[i] === 'failed') this.app.otherIdReadFailed(id);
    });
    this.found(found);
  }

  private async confirmOne(id: string): Promise<Verdict> {
    try {
      // No `source`: a webhook naming another id is no evidence that webhooks reach us.
      // Believed only when the bank knows it and no other application of ours records it (the activity checks).
      await confirmations(this.merchantId).getApplicationStatus({
        financeApplicationId: id,
        merchantReference: this.app.merchantReference,
        confirmsDuplicate: true,
      });
      return 'found';
    } catch (err) {
      if (isCancellation(err)) throw err;
      const verdict = verdictOf(err);
      if (verdict === 'failed') {
        log.warn('Could not confirm another financeApplicationId at the bank; its webhooks are counted, not reported', {
          ...this.report.ids(),
          bankFailureType: failureType(err),
        });
      }
      return verdict;
    }
  }

  /**
   * Webhooks naming an id the bank did not confirm: a metric, one log line per run, nothing to the merchant. Not in a
   * task that continues as new (`atEnd` aside): the server refuses it when signals came meanwhile (a flood does that
   * often), the worker runs it again, and the metric would count twice; the next run emits what was carried.
   */
  countUnconfirmed(atEnd = false): void {
    if (!atEnd && this.continuesAsNew()) return;
    const unconfirmed = this.app.takeUnconfirmed();
    if (!unconfirmed) return;
    const counter = inventedCounter();
    if (unconfirmed.notFound > 0) counter.add(unconfirmed.notFound, { verdict: 'not_found' });
    if (unconfirmed.unchecked > 0) counter.add(unconfirmed.unchecked, { verdict: 'unchecked' });
    if (!unconfirmed.firstInRun) return;
    log.warn('Webhooks naming another financeApplicationId the bank did not confirm: counted, not reported', {
      ...this.report.ids(),
      ...this.app.state.otherIds,
      limits: OTHER_ID_LIMITS,
    });
    // Once per run too (a flood makes one batch per signal): later changes refresh the details with the counts.
    this.report.describe();
  }

  /** Another application at the bank for this reference: visible to operators, counted, told to the merchant. */
  private found(ids: string[]): void {
    if (ids.length === 0) return;
    upsertSearchAttributes([
      { key: DuplicateFinanceApplicationId, value: this.app.state.duplicateApplicationIds![0]! },
    ]);
    duplicateCounter().add(ids.length);
    log.warn('Duplicate application at the bank for this reference (a retried create); it is not followed', {
      ...this.report.ids(),
      duplicateFinanceApplicationIds: ids,
    });
    this.report.describe();
  }
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
