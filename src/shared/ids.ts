/**
 * Workflow ids, built in one place so the client, the facade, the receiver and the workflows agree.
 * A merchant id, merchant reference or consent id is used verbatim after a prefix: ids are opaque to Temporal.
 *
 * Tenancy (docs/merchant-api.md, "Merchants"): a finance application's identity is its merchant and its reference, so two
 * merchants may use the same reference without meeting. Merchant ids cannot contain `:` or `~` and references
 * cannot contain `:`, so `finance-application:{merchantId}:{ref}` never equals another merchant's id.
 */
export const financeApplicationWorkflowId = (merchantId: string, merchantReference: string): string =>
  `finance-application:${merchantId}:${merchantReference}`;

/**
 * Consent ids are the bank's and name one consent across merchants: a consent belongs to the merchant that first
 * claimed it (its consentClaimWorkflow), so its claim and its refresh (one at a time, whoever owns it) are keyed by
 * the consent id alone.
 */
export const consentRefreshWorkflowId = (consentId: string): string => `consent-refresh:${consentId}`;

/**
 * The workflows that hand a consent's events to its owner are keyed by the owner too: when a consent changes hands
 * (released, then claimed by another merchant), the new owner's events start its own workflow, and the previous
 * owner's, still open, receive nothing more (decision 0024).
 */
export const transactionEventsWorkflowId = (merchantId: string, consentId: string): string =>
  `consent-transactions:${merchantId}:${consentId}`;

/** The consent's late bank reports (accountEvents that came when their refresh could no longer take them), per owner. */
export const lateAccountEventsWorkflowId = (merchantId: string, consentId: string): string =>
  `consent-late-reports:${merchantId}:${consentId}`;

/** The consent's claim: which merchant owns it (the first to claim it). Runs until released. */
export const consentClaimWorkflowId = (consentId: string): string => `consent-claim:${consentId}`;

/** Merchant references and consent ids that may appear in a URL path segment and a workflow id. */
// Not `.` or `..` alone: URL clients normalise those path segments away, so a webhookUrl built from one would
// never reach its route.
export const REFERENCE_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9._~-]{1,128}$/;

/**
 * Merchant ids (the names in MERCHANT_API_KEYS): short and plain, no `:` and no `~`, so they separate cleanly from
 * a reference in a workflow id and in a webhook URL's key (webhookKey).
 */
export const MERCHANT_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** The `:ref` segment of a webhook URL: `{merchantId}~{merchantReference}`, one application across merchants. */
export const webhookKey = (merchantId: string, merchantReference: string): string =>
  `${merchantId}~${merchantReference}`;

/** The merchant and reference of a tenant webhook key, or undefined when the segment cannot be one. */
export function parseWebhookKey(segment: string): { merchantId: string; merchantReference: string } | undefined {
  const tilde = segment.indexOf('~');
  if (tilde < 1) return undefined;
  const merchantId = segment.slice(0, tilde);
  const merchantReference = segment.slice(tilde + 1);
  if (!MERCHANT_ID_PATTERN.test(merchantId) || !REFERENCE_PATTERN.test(merchantReference)) return undefined;
  return { merchantId, merchantReference };
}

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

/**
 * The merchant's callback signing secret rotations (merchantSecretsWorkflow, src/shared/merchant-secrets.ts): one per
 * merchant, keyed by the merchant alone.
 */
export const merchantSecretsWorkflowId = (merchantId: string): string => `merchant-secrets:${merchantId}`;

/**
 * Whose data a workflow's payloads are, from its id alone (the payload codec sees ids, not search attributes:
 * docs/decisions/0048-per-merchant-payload-keys.md): `{ merchantId }` for the ids that name their merchant,
 * undefined for the ids keyed by a consent alone (its refresh and claim) and any other.
 */
export function merchantOfWorkflowId(workflowId: string): { merchantId: string } | undefined {
  const parts = workflowId.split(':');
  const [kind] = parts;
  if (kind === 'merchant-secrets') return parts.length === 2 ? merchantIdOf(parts[1]) : undefined;
  // A merchant's undelivered callbacks and its bulk resends (src/shared/undelivered-callbacks.ts): the resend's id
  // goes on with the range's times, which hold colons themselves.
  if (kind === 'callback-ledger') return parts.length === 2 ? merchantIdOf(parts[1]) : undefined;
  if (kind === 'callback-resend') return parts.length >= 4 ? merchantIdOf(parts[1]) : undefined;
  if (kind === 'finance-application' || kind === 'consent-transactions' || kind === 'consent-late-reports')
    return parts.length === 3 ? merchantIdOf(parts[1]) : undefined;
  // A redelivery's id is its callback's idempotency key: the application's id and at least a status after it
  // (src/workflows/finance-application/merchant-notification.ts).
  if (kind === 'callback-redelivery' && parts[1] === 'finance-application')
    return parts.length >= 5 ? merchantIdOf(parts[2]) : undefined;
  return undefined;
}

const merchantIdOf = (id: string | undefined): { merchantId: string } | undefined =>
  id !== undefined && MERCHANT_ID_PATTERN.test(id) ? { merchantId: id } : undefined;
