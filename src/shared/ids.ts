/**
 * Workflow ids, built in one place so the client, the receiver and the workflows agree.
 * A merchant reference or consent id is used verbatim after a prefix: ids are opaque strings to Temporal.
 */
export const financeApplicationWorkflowId = (merchantReference: string): string =>
  `finance-application:${merchantReference}`;

export const consentRefreshWorkflowId = (consentId: string): string => `consent-refresh:${consentId}`;

export const transactionEventsWorkflowId = (consentId: string): string => `consent-transactions:${consentId}`;

/** The consent's late bank reports: accountEvents that came when their refresh could no longer take them. */
export const lateAccountEventsWorkflowId = (consentId: string): string => `consent-late-reports:${consentId}`;

/** Merchant references and consent ids that may appear in a URL path segment and a workflow id. */
// Not `.` or `..` alone: URL clients normalise those path segments away, so a webhookUrl built from one would
// never reach its route.
export const REFERENCE_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9._~-]{1,128}$/;

/**
 * Ids the bank puts in webhooks (financeApplicationId, taskId, accountId): 1 to 128 visible ASCII characters, after
 * trimming. No spaces, no control characters: they reach signals, logs and the Web UI. consentId is stricter
 * (REFERENCE_PATTERN): it becomes part of workflow ids.
 */
export const BANK_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** A bank code in an accountEvent: 1 to 64 visible ASCII characters. */
export const BANK_CODE_PATTERN = /^[\x21-\x7e]{1,64}$/;

/** Free text from the bank (a bank's name, a status, an event type) may be any text but control characters. */
export const NO_CONTROL_CHARACTERS = /^[^\p{Cc}\u2028\u2029]*$/u;
