/**
 * The bank's wire format, as both sides of the wire see it: our bank client (src/activities/bank) and the
 * bank sandbox (src/sandbox). Types and constants only, so workflows may import it too.
 *
 * Where the bank's document says "not shown", the decision taken is written here, next to the type it
 * shapes, and recorded in docs/decisions/ (one record per gap). Section numbers are those of docs/bank-interface.md.
 */

/** Section 4.1: scope requested with the client-credentials grant. */
export const BANK_SCOPE = 'PAY_LATER';

/** Section 2: access-token response. */
export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

/**
 * Section 4.2: create request. `webhookUrl` and `redirectUrl` are shown; other fields are not, so the client
 * passes on whatever the merchant sends (decision: the merchant owns the rest of the body).
 */
export interface CreateApplicationRequest {
  redirectUrl: string;
  webhookUrl?: string;
  [field: string]: unknown;
}

/**
 * Section 4.2: create response, not shown. Decision: a JSON object carrying at least `financeApplicationId`
 * (the id the webhook body carries, section 6.1) and usually `status`; every other field is kept as sent, except
 * the webhook URL the bank may echo (withoutWebhookUrl).
 */
export interface CreateApplicationResponse {
  financeApplicationId: string;
  status?: string;
  [field: string]: unknown;
}

/** Field names of the create response that may carry our webhookUrl (the sandbox echoes `webhookUrl`). */
const WEBHOOK_FIELD = /webhook/i;

/**
 * The bank's create response without our webhookUrl: its hash is the only credential of the status webhook, so it
 * never reaches a merchant (or the workflow's state). Drops every field whose name contains "webhook", at any depth,
 * and, given the hash, every string value that contains it (the bank may echo the URL under another name).
 */
export function withoutWebhookUrl(response: CreateApplicationResponse, hash?: string): CreateApplicationResponse {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.filter(kept).map(strip);
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value))
      if (!WEBHOOK_FIELD.test(key) && kept(field)) out[key] = strip(field);
    return out;
  };
  const kept = (value: unknown): boolean => !(hash && typeof value === 'string' && value.includes(hash));
  return strip(response) as CreateApplicationResponse;
}

/**
 * Section 4.3: status response, not shown. Decision: a JSON object carrying at least `status` (string);
 * `financeApplicationId` and `updatedAt` when present; other fields are kept.
 */
export interface ApplicationStatusResponse {
  status: string;
  financeApplicationId?: string;
  updatedAt?: string;
  [field: string]: unknown;
}

/**
 * Section 3: the application's status set, not shown. Decision: the sandbox's set. Statuses only move
 * forward along FINANCE_APPLICATION_STATUS_ORDER; the four terminal ones share the last rank.
 */
export const FINANCE_APPLICATION_STATUSES = [
  'CREATED',
  'IN_PROGRESS',
  'APPROVED',
  'SIGNED',
  'COMPLETED',
  'DECLINED',
  'CANCELLED',
  'EXPIRED',
] as const;
export type KnownFinanceApplicationStatus = (typeof FINANCE_APPLICATION_STATUSES)[number];

/** Rank of each status: a read whose rank is lower than the current one is stale, not a regression. */
export const FINANCE_APPLICATION_STATUS_ORDER: Record<KnownFinanceApplicationStatus, number> = {
  CREATED: 0,
  IN_PROGRESS: 1,
  APPROVED: 2,
  SIGNED: 3,
  COMPLETED: 4,
  DECLINED: 4,
  CANCELLED: 4,
  EXPIRED: 4,
};

export const TERMINAL_FINANCE_APPLICATION_STATUSES: readonly KnownFinanceApplicationStatus[] = [
  'COMPLETED',
  'DECLINED',
  'CANCELLED',
  'EXPIRED',
];

/** Section 6.1: finance-application webhook. Decision: the bank POSTs JSON with this body. */
export interface FinanceApplicationWebhookBody {
  financeApplicationId: string;
  [field: string]: unknown;
}

/**
 * Section 4.4: how consentId is supplied is not shown. Decision: a JSON body `{ consentId }` on
 * `PUT /refresh`. Response: `{ taskId }` plus fields we keep as sent.
 */
export interface RefreshRequest {
  consentId: string;
}
export interface RefreshResponse {
  taskId: string;
  [field: string]: unknown;
}

/** Section 3: only FINISHED is shown. Decision: any other taskStatus is a per-bank failure (the sandbox sends FAILED). */
export const TASK_STATUS_FINISHED = 'FINISHED';

/** Section 6.2: transactionEvent. Only NEW is supported. */
export interface TransactionEventBody {
  consentId: string;
  eventType?: string;
  accounts: { accountId: string; [field: string]: unknown }[];
}

/**
 * Section 6.2: accountEvent. Item eventType values beyond ADDED are not shown. Decision: any string is
 * accepted and passed on (the sandbox sends ADDED, UPDATED and REMOVED).
 */
export interface AccountEventBody {
  consentId: string;
  taskId: string;
  taskStatus: string;
  bankCode: string;
  bankName: string;
  accounts: { accountId: string; eventType: string; [field: string]: unknown }[];
}

/**
 * Section 7: error bodies are not shown. Decision: errors are classified by HTTP status alone; a JSON body
 * `{ error, message }` is read when present for the message, never required.
 */
export interface BankErrorBody {
  error?: string;
  message?: string;
}

/** Section 6.3: the Webhook Security Header must match this (empty allowed). */
export const WEBHOOK_SECURITY_HEADER_PATTERN = /^[ a-zA-Z0-9=+/]*$/;

/** A bank status name: what the contract lets through in a URL, a metric label and a search attribute. */
export const STATUS_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
