/**
 * Metric naming (docs/metrics.md lists every series): the service's own metrics start with METRIC_PREFIX, carry
 * their unit (`_seconds`, `_bytes`) and counters end in `_total`; label names are snake_case; label values come from
 * bounded sets, anything else folded into OTHER_LABEL. The SDK's own series keep its `temporal_` prefix, the
 * client libraries' process series their `process_` and `nodejs_` ones.
 */
export const METRIC_PREFIX = 'paylater_';

/** The label value every unknown or unbounded input folds into (an HTTP method, a route, an event type). */
export const OTHER_LABEL = 'other';

/** The HTTP methods a `method` label names; any other (WebDAV, a client's own) is OTHER_LABEL. */
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'] as const;

/** A request's `method` label: one of HTTP_METHODS or OTHER_LABEL (the method comes from the client). */
export function methodLabel(method: string | undefined): string {
  return (HTTP_METHODS as readonly (string | undefined)[]).includes(method) ? method! : OTHER_LABEL;
}

/** The merchant callbacks' event types (the `event` label of paylater_merchant_callbacks_total). */
export const MERCHANT_CALLBACK_EVENTS = [
  'finance-application.status-changed',
  'finance-application.duplicate-detected',
  'consent.late-bank-report',
  'transactionsChanged',
] as const;

/** A callback's `event` label: one of MERCHANT_CALLBACK_EVENTS or OTHER_LABEL. */
export function callbackEventLabel(type: unknown): string {
  return (MERCHANT_CALLBACK_EVENTS as readonly unknown[]).includes(type) ? (type as string) : OTHER_LABEL;
}

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
export const OTHER_STATUS = OTHER_LABEL;
