import { z } from 'zod';

/**
 * What a merchant callback's body is, per payload version (docs/decisions/0040-callback-payload-shape.md):
 * - `2026-11-25`: the Standard Webhooks payload `{ "type", "timestamp", "data" }` (https://www.standardwebhooks.com),
 *   `type` a dotted name from CALLBACK_EVENT_TYPES, `data` the event's fields;
 * - `legacy`: the event as the workflow hands it over (`{ "type", ...fields }`), deprecated.
 * The workflows keep passing the legacy event (their histories stay as they are); the callback activity wraps it
 * here. The zod schemas below are both the description (src/api/openapi/merchant-callbacks.ts, OpenAPI
 * `webhooks`) and the unit tests' check that what is sent is what is described.
 */

export const CALLBACK_PAYLOAD_VERSIONS = ['2026-11-25', 'legacy'] as const;
export type CallbackPayloadVersion = (typeof CALLBACK_PAYLOAD_VERSIONS)[number];
/** The current version: the default of CALLBACK_PAYLOAD_VERSION and of each merchant's callbackPayloadVersion. */
export const CURRENT_CALLBACK_PAYLOAD_VERSION: CallbackPayloadVersion = '2026-11-25';

/** The header naming the body's payload version on every callback (not signed: the body tells the shape too). */
export const CALLBACK_PAYLOAD_VERSION_HEADER = 'callback-payload-version';

/** Each callback's dotted Standard Webhooks type, by the legacy `type` the workflows put in the event. */
export const CALLBACK_EVENT_TYPES = {
  'finance-application.status-changed': 'finance-application.status-changed',
  'finance-application.duplicate-detected': 'finance-application.duplicate-detected',
  transactionsChanged: 'consent.transactions-changed',
  'consent.late-bank-report': 'consent.late-bank-report',
} as const;
export type LegacyCallbackType = keyof typeof CALLBACK_EVENT_TYPES;
export type CallbackEventType = (typeof CALLBACK_EVENT_TYPES)[LegacyCallbackType];

const instant = (description: string) => z.iso.datetime({ offset: true }).meta({ description });

/** The `data` of each event type: the legacy body's fields but `type`. */
export const CALLBACK_DATA_SCHEMAS = {
  'finance-application.status-changed': z
    .object({
      merchantReference: z.string(),
      financeApplicationId: z.string().meta({ description: "The bank's id of the application" }),
      status: z.string().meta({ description: "The bank's status, e.g. CREATED, IN_PROGRESS, COMPLETED" }),
      at: instant('When the service learned the status'),
      source: z.enum(['create', 'webhook', 'poll']).meta({ description: 'How the service learned it' }),
    })
    .meta({ id: 'FinanceApplicationStatusChangedData' }),
  'finance-application.duplicate-detected': z
    .object({
      merchantReference: z.string(),
      financeApplicationId: z.string().meta({ description: 'The application the service follows' }),
      duplicateFinanceApplicationId: z
        .string()
        .meta({ description: 'A second application the bank confirmed for the same reference' }),
      at: instant('When the service reported it'),
    })
    .meta({ id: 'FinanceApplicationDuplicateDetectedData' }),
  'consent.transactions-changed': z
    .object({
      consentId: z.string(),
      eventType: z.string().meta({ description: "The last coalesced transactionEvent's eventType (e.g. NEW)" }),
      accounts: z
        .array(z.object({ accountId: z.string() }))
        .meta({ description: 'Every account changed in the batch, each once, sorted' }),
      events: z.int().min(1).meta({ description: 'transactionEvents coalesced into this batch' }),
      batch: z.int().min(1).meta({ description: '1-based batch number within the consent’s chain of batches' }),
    })
    .meta({ id: 'ConsentTransactionsChangedData' }),
  'consent.late-bank-report': z
    .object({
      consentId: z.string(),
      taskId: z.string().meta({ description: 'The refresh task the bank reported on' }),
      bankCode: z.string(),
      bankName: z.string(),
      taskStatus: z.string().meta({ description: "The bank's task status, e.g. FINISHED or FAILED" }),
      succeeded: z.boolean(),
      accounts: z.array(z.object({ accountId: z.string(), eventType: z.string() })),
      at: instant('When the service recorded the report'),
      reason: z.enum(['refresh-closed', 'no-refresh', 'other-task']).meta({
        description: 'Why it is late: its refresh had ended, there was none, or it reports on another task',
      }),
    })
    .meta({ id: 'ConsentLateBankReportData' }),
} satisfies Record<CallbackEventType, z.ZodObject>;

const componentName = (type: string) =>
  type
    .split(/[.-]/)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');

/** The `2026-11-25` body of one event type. */
export function standardPayloadSchema<T extends CallbackEventType>(type: T) {
  return z
    .object({
      type: z.literal(type),
      timestamp: instant(
        'When the event happened (RFC 3339, UTC): the same on every delivery attempt of it; the attempt’s own time ' +
          'is the `webhook-timestamp` header',
      ),
      data: CALLBACK_DATA_SCHEMAS[type],
    })
    .meta({ id: `${componentName(type)}Callback` });
}

/** The deprecated `legacy` body of one event type: its data's fields beside the legacy `type`. */
export function legacyPayloadSchema<L extends LegacyCallbackType>(legacyType: L) {
  const type = CALLBACK_EVENT_TYPES[legacyType];
  return CALLBACK_DATA_SCHEMAS[type]
    .extend({ type: z.literal(legacyType) })
    .meta({ id: `${componentName(type)}LegacyCallback`, deprecated: true });
}

/** The dotted type of a legacy event type; an unknown one (our bug) is passed on as it is. */
export function callbackEventType(legacyType: unknown): string {
  return typeof legacyType === 'string' && Object.hasOwn(CALLBACK_EVENT_TYPES, legacyType)
    ? CALLBACK_EVENT_TYPES[legacyType as LegacyCallbackType]
    : String(legacyType);
}

/**
 * The JSON body sent for `event` (the workflow's legacy event) in `version`. `occurredAt` is the `timestamp` when the
 * event carries no `at` of its own (a transactions batch): the activity's first scheduling, the same on every retry.
 */
export function callbackBody(
  event: Record<string, unknown>,
  version: CallbackPayloadVersion,
  occurredAt: Date,
): string {
  if (version === 'legacy') return JSON.stringify(event);
  const { type, ...data } = event;
  const at = typeof data.at === 'string' && !Number.isNaN(Date.parse(data.at)) ? new Date(data.at) : occurredAt;
  return JSON.stringify({ type: callbackEventType(type), timestamp: at.toISOString(), data });
}
