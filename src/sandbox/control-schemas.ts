import { z } from 'zod';

/**
 * The sandbox's control inputs as zod schemas: the HTTP control routes (routes/control.ts) validate with them, and
 * the in-process control's types (types.ts) are derived from them, so the two cannot drift.
 */

/** When account webhooks become active after being enabled (docs/bank-interface.md 6.2 "Activation"). */
export const AccountWebhookActivationSchema = z.enum(['next-full-hour', 'immediate']);

/** The application settings of docs/bank-interface.md 6.3 ("Webhook Endpoint" and "Webhook Security Header"). */
export const AccountWebhookSettingsSchema = z.object({
  /** Absolute http(s) URL without query parameters (6.3: "must not contain any parameters"). Unset: events are recorded, never sent. */
  endpoint: z.string().optional(),
  /** Empty or matching `[ a-zA-Z0-9=+/]*`; when non-empty it is sent as the `Authorization` header. */
  securityHeader: z.string().optional(),
  /** Default 'next-full-hour': enabled at hh:31 → active from the next hh:00 (UTC hours). */
  activation: AccountWebhookActivationSchema.optional(),
});

/** Webhook faults; per run (SandboxOptions.webhookFaults / setWebhookFaults) or per application script. */
export const WebhookFaultsSchema = z.object({
  /** Never send (recorded with outcome 'dropped'). */
  drop: z.boolean().optional(),
  /** Copies delivered of each webhook, concurrently (default 1; 3 = the webhook and two duplicates). */
  duplicate: z.number().int().min(1).optional(),
  /** Wait this long before the first attempt. */
  delayMs: z.number().min(0).optional(),
});

/** One scripted status change of a finance application. */
export const ApplicationScriptStepSchema = z.object({
  /** The new status; any non-empty string (the known set is FINANCE_APPLICATION_STATUSES). */
  status: z.string().min(1),
  /** Delay after the previous step (or after creation for the first step). */
  afterMs: z.number().min(0),
  /** Drop only this step's webhook. */
  dropWebhook: z.boolean().optional(),
});

/**
 * Status script of a finance application. The initial status is `initialStatus` (not a step); each step is a
 * change that happens `afterMs` after the previous one. A step whose status equals the current one is no change:
 * nothing is recorded and no webhook is sent.
 */
export const ApplicationScriptSchema = z.object({
  /** The status at creation (not a step, no webhook); default the lifecycle's first status (CREATED). */
  initialStatus: z.string().min(1).optional(),
  steps: z.array(ApplicationScriptStepSchema),
  webhooks: WebhookFaultsSchema.extend({
    /**
     * Hold every webhook of the application until its last step happened, then deliver them newest first,
     * so each webhook arrives after a later status is already readable.
     */
    reorder: z.boolean().optional(),
    /**
     * The first step happens at creation (its afterMs is ignored) and its webhook's first attempt is completed
     * before the 201 is written, so the webhook reaches the client before the id does.
     */
    beforeCreateResponse: z.boolean().optional(),
  }).optional(),
});

/** An account as configured for a consent: an id, or an id with the item eventType to send (default ADDED on the first refresh of the consent in this run, UPDATED afterwards). */
export const ConsentAccountSchema = z.union([
  z.string().min(1),
  z.object({ accountId: z.string().min(1), eventType: z.string().min(1).optional() }),
]);

/** One bank other than the operating bank, linked to a consent. */
export const ConsentBankSchema = z.object({
  bankCode: z.string().min(1),
  bankName: z.string().min(1),
  accounts: z.array(ConsentAccountSchema),
  /** taskStatus of this bank's accountEvent; default FINISHED (send e.g. FAILED to script a failure). */
  taskStatus: z.string().min(1).optional(),
  /** This bank never answers a refresh: no accountEvent at all. */
  neverAnswers: z.boolean().optional(),
  /** Delay of this bank's accountEvent after PUT /refresh; default random in refresh.bankDelayMs. */
  delayMs: z.number().min(0).optional(),
});

/** Override of a consent's data and refresh behaviour; omitted fields keep the data derived from the consentId. */
export const ConsentSetupSchema = z.object({
  operatingAccounts: z.array(z.string().min(1)).optional(),
  banks: z.array(ConsentBankSchema).optional(),
  /** Copies of each accountEvent (default 1). */
  duplicateEvents: z.number().int().min(1).optional(),
  /** Deliver the banks' events in the reverse of their natural (delay) order, all after the longest delay. */
  shuffle: z.boolean().optional(),
  /** The first bank's event is attempted (first attempt completed) before the 202 of PUT /refresh is written. */
  eventBeforeResponse: z.boolean().optional(),
});

/** API routes as named by fault injection and by the api-call log. */
export const ApiRouteSchema = z.enum(['token', 'createApplication', 'getStatus', 'refresh']);

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
export const ApiFaultSchema = z.object({
  route: z.union([ApiRouteSchema, z.literal('*')]),
  kind: z.enum(['5xx', '429', 'latency', 'hang']),
  afterActing: z.boolean().optional(),
  count: z.union([z.number().int().min(1), z.literal('unlimited')]).optional(),
  status: z.number().int().min(500).max(599).optional(),
  retryAfterSeconds: z.number().int().min(0).optional(),
  latencyMs: z.number().min(0).optional(),
});
