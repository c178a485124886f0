/**
 * Names of the business metrics the workflows emit through the SDK's `metricMeter` (src/workflows/metrics.ts).
 * The worker's Prometheus exporter adds `_total` to counters (countersTotalSuffix) and no prefix: these are the
 * names before that suffix. Labels are bounded sets only (never a reference, an id or a free-form string).
 * Kept here, out of workflow code, so tests and the deploy checks can read them.
 */
export const WorkflowMetric = {
  /** Applications created at the bank (once per application, not per run). */
  applicationsStarted: 'paylater_finance_applications_started',
  /** Applications ended; labels `outcome` (terminal | deadline | unknown_at_bank | create_rejected | create_failed | callback_refused), `status`. */
  applicationsFinished: 'paylater_finance_applications_finished',
  /** Status changes recorded; label `source` (webhook | poll | create). */
  statusChanges: 'paylater_finance_application_status_changes',
  /** Changes found by polling that no webhook announced (none was pending when it was recorded); label `webhooks_live`. */
  unannouncedChanges: 'paylater_finance_application_unannounced_changes',
  /** From the first pending webhook of a batch (the workflow task that took its signal) to the change it announced. */
  webhookDelay: 'paylater_finance_application_webhook_delay_seconds',
  /** Applications the bank stopped knowing (404 on their status read), counted once per run of 404s. */
  unknownAtBank: 'paylater_finance_application_unknown_at_bank',
  /** Other applications the bank created for one merchant reference. */
  duplicatesDetected: 'paylater_finance_application_duplicates_detected',
  /**
   * Status webhooks naming another financeApplicationId that the bank did not confirm (never reported, never pushed
   * to the merchant); label `verdict` (not_found: a status read answered 404 | unchecked: beyond the bounds, or the read failed).
   */
  inventedApplicationIds: 'paylater_finance_application_invented_ids',
  /** Consent refreshes ended; label `ended_by` (all-reported | quiet-period | timeout | not-started). */
  refreshesFinished: 'paylater_consent_refreshes_finished',
  /** Expected banks that had not reported when a refresh ended. */
  refreshMissingBanks: 'paylater_consent_refresh_missing_banks',
} as const;

/** Buckets (seconds) of the webhook-to-recorded delay: a read on the rate-limited queue takes ~0.1 s to minutes. */
export const WEBHOOK_DELAY_BUCKETS_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900];

/** Label values of `status` outside the application's status order (the bank's set is not shown): one bucket. */
export const OTHER_STATUS = 'other';
