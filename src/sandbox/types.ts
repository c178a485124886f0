import type { Logger } from 'pino';
import type { z } from 'zod';
import type { CreateApplicationRequest } from '../shared/bank-wire';
import type {
  AccountWebhookActivationSchema,
  AccountWebhookSettingsSchema,
  ApiFaultSchema,
  ApiRouteSchema,
  ApplicationScriptSchema,
  ApplicationScriptStepSchema,
  ConsentAccountSchema,
  ConsentBankSchema,
  ConsentSetupSchema,
  WebhookFaultsSchema,
} from './control-schemas';

// The control inputs' types are derived from their zod schemas (control-schemas.ts: documented there).

/** Epoch milliseconds. Injectable so tests can place "now" anywhere (e.g. at hh:31 for the activation rule). */
export type Clock = () => number;

export type AccountWebhookActivation = z.infer<typeof AccountWebhookActivationSchema>;

export type AccountWebhookSettings = z.infer<typeof AccountWebhookSettingsSchema>;

export type WebhookFaults = z.infer<typeof WebhookFaultsSchema>;

export type ApplicationScriptStep = z.infer<typeof ApplicationScriptStepSchema>;

export type ApplicationScript = z.infer<typeof ApplicationScriptSchema>;

/**
 * Which create requests a script applies to: a predicate (in-process only) or an object whose entries must all
 * equal (===) the same top-level fields of the create body (works over HTTP too, e.g. `{ merchantReference: 'r1' }`).
 * Absent: every application created from now on.
 */
export type ApplicationMatch = ((body: CreateApplicationRequest) => boolean) | Record<string, unknown>;

export type ConsentAccount = z.infer<typeof ConsentAccountSchema>;

export type ConsentBank = z.infer<typeof ConsentBankSchema>;

export type ConsentSetup = z.infer<typeof ConsentSetupSchema>;

/** A consent's data as the sandbox uses it (derived from the consentId, then overridden by setConsent). */
export interface ResolvedConsent {
  consentId: string;
  operatingAccounts: string[];
  banks: ConsentBank[];
  duplicateEvents: number;
  shuffle: boolean;
  eventBeforeResponse: boolean;
}

export type ApiRoute = z.infer<typeof ApiRouteSchema>;

export type ApiFault = z.infer<typeof ApiFaultSchema>;

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
