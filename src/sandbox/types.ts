import type { Logger } from 'pino';
import type { CreateApplicationRequest } from '../shared/bank-wire';

/** Epoch milliseconds. Injectable so tests can place "now" anywhere (e.g. at hh:31 for the activation rule). */
export type Clock = () => number;

/** When account webhooks become active after being enabled (bank-interface 6.2 "Activation"). */
export type AccountWebhookActivation = 'next-full-hour' | 'immediate';

/** The application settings of bank-interface 6.3 ("Webhook Endpoint" and "Webhook Security Header"). */
export interface AccountWebhookSettings {
  /** Absolute http(s) URL without query parameters (6.3: "must not contain any parameters"). Unset: events are recorded, never sent. */
  endpoint?: string;
  /** Empty or matching `[ a-zA-Z0-9=+/]*`; when non-empty it is sent as the `Authorization` header. */
  securityHeader?: string;
  /** Default 'next-full-hour': enabled at hh:31 → active from the next hh:00 (UTC hours). */
  activation?: AccountWebhookActivation;
}

/** Webhook faults; per run (SandboxOptions.webhookFaults / setWebhookFaults) or per application script. */
export interface WebhookFaults {
  /** Never send (recorded with outcome 'dropped'). */
  drop?: boolean;
  /** Copies delivered of each webhook, concurrently (default 1; 3 = the webhook and two duplicates). */
  duplicate?: number;
  /** Wait this long before the first attempt. */
  delayMs?: number;
}

/** One scripted status change of a finance application. */
export interface ApplicationScriptStep {
  /** The new status; any non-empty string (the known set is FINANCE_APPLICATION_STATUSES). */
  status: string;
  /** Delay after the previous step (or after creation for the first step). */
  afterMs: number;
  /** Drop only this step's webhook. */
  dropWebhook?: boolean;
}

/**
 * Status script of a finance application. The initial status is `initialStatus` (not a step); each step is a
 * change that happens `afterMs` after the previous one. A step whose status equals the current one is no change:
 * nothing is recorded and no webhook is sent.
 */
export interface ApplicationScript {
  /** The status at creation (not a step, no webhook); default the lifecycle's first status (CREATED). */
  initialStatus?: string;
  steps: ApplicationScriptStep[];
  webhooks?: WebhookFaults & {
    /**
     * Hold every webhook of the application until its last step happened, then deliver them newest first,
     * so each webhook arrives after a later status is already readable.
     */
    reorder?: boolean;
    /**
     * The first step happens at creation (its afterMs is ignored) and its webhook's first attempt is completed
     * before the 201 is written, so the webhook reaches the client before the id does.
     */
    beforeCreateResponse?: boolean;
  };
}

/**
 * Which create requests a script applies to: a predicate (in-process only) or an object whose entries must all
 * equal (===) the same top-level fields of the create body (works over HTTP too, e.g. `{ merchantReference: 'r1' }`).
 * Absent: every application created from now on.
 */
export type ApplicationMatch = ((body: CreateApplicationRequest) => boolean) | Record<string, unknown>;

/** An account as configured for a consent: an id, or an id with the item eventType to send (default ADDED on the first refresh of the consent in this run, UPDATED afterwards). */
export type ConsentAccount = string | { accountId: string; eventType?: string };

/** One bank other than the operating bank, linked to a consent. */
export interface ConsentBank {
  bankCode: string;
  bankName: string;
  accounts: ConsentAccount[];
  /** taskStatus of this bank's accountEvent; default FINISHED (send e.g. FAILED to script a failure). */
  taskStatus?: string;
  /** This bank never answers a refresh: no accountEvent at all. */
  neverAnswers?: boolean;
  /** Delay of this bank's accountEvent after PUT /refresh; default random in refresh.bankDelayMs. */
  delayMs?: number;
}

/** Override of a consent's data and refresh behaviour; omitted fields keep the data derived from the consentId. */
export interface ConsentSetup {
  operatingAccounts?: string[];
  banks?: ConsentBank[];
  /** Copies of each accountEvent (default 1). */
  duplicateEvents?: number;
  /** Deliver the banks' events in the reverse of their natural (delay) order, all after the longest delay. */
  shuffle?: boolean;
  /** The first bank's event is attempted (first attempt completed) before the 202 of PUT /refresh is written. */
  eventBeforeResponse?: boolean;
}

/** A consent's data as the sandbox uses it (derived from the consentId, then overridden by setConsent). */
export interface ResolvedConsent {
  consentId: string;
  operatingAccounts: string[];
  banks: ConsentBank[];
  duplicateEvents: number;
  shuffle: boolean;
  eventBeforeResponse: boolean;
}

/** API routes as named by fault injection and by the api-call log. */
export type ApiRoute = 'token' | 'createApplication' | 'getStatus' | 'refresh';

/**
 * A fault on the bank's API: applies to the next `count` calls (default 1; 'unlimited' for the whole run) of
 * `route` ('*' = any route). Faults are queued; each call consumes at most one (the oldest that matches).
 * - '5xx': answer `status` (default 503) with a JSON error body.
 * - '429': answer 429 with `Retry-After: retryAfterSeconds` (default 1).
 * - 'latency': wait `latencyMs` (default 1000), then answer normally.
 * - 'hang': never answer (the socket is destroyed when the sandbox closes).
 * With `afterActing`, '5xx', '429' and 'hang' apply after the bank has done the work (the application is created,
 * the refresh started): the ambiguous answer a client must retry safely.
 */
export interface ApiFault {
  route: ApiRoute | '*';
  kind: '5xx' | '429' | 'latency' | 'hang';
  afterActing?: boolean;
  count?: number | 'unlimited';
  status?: number;
  retryAfterSeconds?: number;
  latencyMs?: number;
}

export type WebhookKind = 'financeApplication' | 'accountEvent' | 'transactionEvent';

/**
 * - pending: attempts still going on (or waiting for its delay / reorder release)
 * - delivered: a 2xx was received
 * - failed: every attempt failed
 * - dropped: a fault switch dropped it, never sent
 * - inactive: account webhook emitted before activation, never sent
 * - no-endpoint: account webhook emitted with no Webhook Endpoint configured, never sent
 * - cancelled: the sandbox was stopped or reset before it was delivered
 */
export type WebhookOutcome = 'pending' | 'delivered' | 'failed' | 'dropped' | 'inactive' | 'no-endpoint' | 'cancelled';

export interface WebhookAttempt {
  /** 1-based. */
  attempt: number;
  /** ISO time the attempt started. */
  at: string;
  /** The receiver's HTTP status; null on connection error or timeout. */
  status: number | null;
  /** Error code or message when no status was received. */
  error?: string;
}

/** Ground truth for one webhook copy. */
export interface WebhookDelivery {
  /** Unique per copy. */
  deliveryId: string;
  kind: WebhookKind;
  /** The URL exactly as configured (finance application: the webhookUrl as given at creation). */
  url: string | null;
  body: Record<string, unknown>;
  /** Why it was emitted: 'status:<STATUS>' for a status change, 'manual' for control sends, 'refresh', 'transactions' (control), 'spontaneous' (timer). */
  trigger: string;
  /** 1-based copy number when duplicated. */
  copy: number;
  createdAt: string;
  outcome: WebhookOutcome;
  attempts: WebhookAttempt[];
}

export interface StatusChange {
  status: string;
  at: string;
}

/** Ground truth for one finance application. */
export interface ApplicationRecord {
  financeApplicationId: string;
  /** The create body as received. */
  createRequest: CreateApplicationRequest;
  createdAt: string;
  status: string;
  updatedAt: string;
  statusHistory: StatusChange[];
  /** The script it follows. */
  script: ApplicationScript;
  webhooks: WebhookDelivery[];
}

/** Ground truth for one refresh task. */
export interface RefreshTaskRecord {
  taskId: string;
  consentId: string;
  requestedAt: string;
  /** The banks as scripted for this task, with the delay actually used. */
  banks: (ConsentBank & { delayMs: number })[];
  /** accountEvents emitted for this task (each copy), in emission order. */
  events: WebhookDelivery[];
}

export interface ApiCallRecord {
  at: string;
  route: ApiRoute | 'unknown';
  method: string;
  path: string;
  /** Status written; null while unanswered (e.g. a hang). */
  status: number | null;
  /** The injected fault it consumed, if any. */
  fault?: ApiFault['kind'];
  /** The fault replaced the answer of a call the bank had acted on. */
  afterActing?: boolean;
}

export interface TransactionEventsRequest {
  /** Number of events (default 1). */
  count?: number;
  /** Accounts listed in each event (default: all the consent's operating accounts). */
  accountIds?: string[];
  /** Spread the events randomly over this window (default 0: all at once). */
  withinMs?: number;
}

/**
 * The sandbox's test controls and ground truth. Every read returns a copy. Also served over HTTP under
 * `/_sandbox/...` (see control-routes.ts).
 */
export interface SandboxControl {
  /** Adds a script rule; the newest matching rule wins. Returns the rule id. */
  setApplicationScript(script: ApplicationScript, match?: ApplicationMatch): string;
  /** Removes every script rule (back to the default lifecycle). */
  clearApplicationScripts(): void;
  /** Changes an application's status now (a status change, with its webhook). Throws on an unknown id. */
  setApplicationStatus(financeApplicationId: string, status: string): void;
  /** A burst of `count` identical webhooks for the application, sent concurrently; resolves when all settled. */
  sendApplicationWebhooks(financeApplicationId: string, count: number): Promise<WebhookDelivery[]>;
  /** Per-run webhook faults for every webhook (application scripts override them field by field). */
  setWebhookFaults(faults: WebhookFaults): void;
  /** Changes the account-webhook settings; re-enabling computes the activation time from now. Throws on invalid settings. */
  setAccountWebhook(settings: AccountWebhookSettings): void;
  /** When account webhooks are (or become) active; null when no endpoint is set. */
  accountWebhookActiveFrom(): string | null;
  setConsent(consentId: string, setup: ConsentSetup): void;
  /** The consent's data as the next refresh would use it. */
  consent(consentId: string): ResolvedConsent;
  /** Sends a raw body to the account Webhook Endpoint (same activation, header and retries as events). */
  sendAccountEvent(body: Record<string, unknown>): Promise<WebhookDelivery>;
  /** Emits transactionEvents `{ consentId, eventType: 'NEW', accounts }`; resolves once all were emitted. */
  emitTransactionEvents(consentId: string, request?: TransactionEventsRequest): Promise<void>;
  injectApiFault(fault: ApiFault): void;
  clearApiFaults(): void;
  revokeAllTokens(): void;
  /**
   * Back to the state at start: stops lifecycles and pending deliveries, forgets applications, tasks, scripts,
   * consent overrides, faults, call logs and counters. Issued tokens stay valid (a client's cached token keeps working).
   */
  reset(): void;
  applications(): ApplicationRecord[];
  application(financeApplicationId: string): ApplicationRecord | undefined;
  refreshTasks(): RefreshTaskRecord[];
  /** Every account-webhook copy (accountEvent and transactionEvent), whatever its outcome. */
  accountWebhooksSent(): WebhookDelivery[];
  /** Requests that reached the token endpoint (valid or not, faulted or not). */
  tokenRequestCount(): number;
  apiCalls(): ApiCallRecord[];
}

export interface SandboxOptions {
  clientId: string;
  clientSecret: string;
  /** Default 3600. */
  tokenTtlSeconds?: number;
  accountWebhook?: AccountWebhookSettings;
  /**
   * The default script: `statuses` (default CREATED → IN_PROGRESS → APPROVED → SIGNED → COMPLETED; another bank's
   * vocabulary when set: the first at creation), one every `stepMs` (default 10000).
   */
  lifecycle?: { stepMs?: number; statuses?: string[] };
  /** Defaults: 6 attempts, 500 ms doubling up to 30 s, 5 s timeout per attempt. */
  webhookRetry?: { attempts?: number; initialDelayMs?: number; maxDelayMs?: number; timeoutMs?: number };
  /** Default [1000, 4000]: each bank's accountEvent comes a random delay in this range after PUT /refresh. */
  refresh?: { bankDelayMs?: [min: number, max: number] };
  /** Per-run webhook faults. */
  webhookFaults?: WebhookFaults;
  /** Spontaneous transactionEvents for consents seen so far (embedded demo); off by default. */
  transactionEvents?: { everyMs: number };
  /**
   * Keep the sandbox's memory in this file (src/sandbox/persistence.ts): loaded at creation, saved at most `everyMs`
   * (default 250) after each change and at stop. Absent: memory only (tests).
   */
  persistence?: { file: string; everyMs?: number };
  /** Default Date.now. */
  clock?: Clock;
  /** Default: silent. */
  logger?: Logger;
}
