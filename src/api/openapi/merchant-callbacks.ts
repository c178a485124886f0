/**
 * The merchant callbacks as OpenAPI 3.1 `webhooks` (requests the service sends, not routes it serves): one entry
 * per event type and payload version, the body the zod schema the callback activity's bodies are checked against
 * (src/activities/callback-payload.ts), the Standard Webhooks signature headers, and what the merchant answers.
 * Gathered into the document by src/api/openapi/document.ts; docs/merchant-api.md ("Callbacks") is the prose.
 */
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import {
  CALLBACK_EVENT_TYPES,
  CALLBACK_PAYLOAD_VERSION_HEADER,
  CURRENT_CALLBACK_PAYLOAD_VERSION,
  legacyPayloadSchema,
  standardPayloadSchema,
  type CallbackEventType,
  type LegacyCallbackType,
} from '../../activities/callback-payload';

/** The tag of every callback (document.ts lists it after the routes' tags). */
export const CALLBACKS_TAG = 'Merchant callbacks (sent to the merchant)';

/** What each event is, and where it goes. */
const EVENTS: Record<CallbackEventType, { summary: string; to: string; operationId: string }> = {
  'finance-application.status-changed': {
    summary: 'A finance application changed status',
    to: "the application's `callbackUrl`, once per status, in order",
    operationId: 'financeApplicationStatusChanged',
  },
  'finance-application.duplicate-detected': {
    summary: 'The bank confirmed a second application for the same merchant reference',
    to: "the application's `callbackUrl`",
    operationId: 'financeApplicationDuplicateDetected',
  },
  'consent.transactions-changed': {
    summary: "A coalesced batch of a consent's changed accounts (transactionEvents)",
    to: "the merchant's `transactionsCallbackUrl` (MERCHANTS_FILE) or TRANSACTIONS_CALLBACK_URL",
    operationId: 'consentTransactionsChanged',
  },
  'consent.late-bank-report': {
    summary: 'A bank reported on a refresh after the refresh had ended',
    to: "the merchant's `transactionsCallbackUrl` (MERCHANTS_FILE) or TRANSACTIONS_CALLBACK_URL",
    operationId: 'consentLateBankReport',
  },
};

/** The headers of every callback: Standard Webhooks' three (src/security/callback-signature.ts) and ours. */
const headers = (version: string) =>
  z.object({
    'webhook-id': z.string().meta({
      description: 'The event’s id and idempotency key: the same on every delivery attempt of the event; drop a repeat',
      example: 'finance-application:test:order-4711:COMPLETED',
    }),
    'webhook-timestamp': z.string().regex(/^\d+$/).meta({
      description:
        'Seconds since the epoch when this attempt was signed; refuse one more than 5 minutes off your clock',
      example: '1795564800',
    }),
    'webhook-signature': z
      .string()
      .regex(/^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$/)
      .meta({
        description:
          'Space-separated `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<raw body>`, one per ' +
          'signing secret (two during a rotation): the callback is authentic when one matches with your `whsec_` ' +
          'secret (base64 after the prefix). Any Standard Webhooks library verifies it',
      }),
    'idempotency-key': z.string().meta({ description: 'The same value as `webhook-id`' }),
    [CALLBACK_PAYLOAD_VERSION_HEADER]: z.literal(version).meta({
      description:
        "The body's payload version (the merchant's `callbackPayloadVersion`, else CALLBACK_PAYLOAD_VERSION); " +
        'not signed: the body says the same by its shape',
    }),
  });

const RESPONSES: ZodOpenApiOperationObject['responses'] = {
  '2XX': {
    description:
      'Taken: the event counts as delivered and is never sent again. Answer quickly (within 10 s): store, then ' +
      'process; the answer’s body is ignored',
  },
  '408': { description: 'Retried, as a 5xx' },
  '429': { description: 'Retried after `Retry-After` (seconds or an HTTP date, at most 5 minutes)' },
  '4XX': {
    description:
      'Refused (a 3xx too: redirects are not followed): not retried; the service logs and counts it as ' +
      '`rejected`. Answer 401 to a bad signature',
  },
  '5XX': {
    description:
      'Retried with backoff (5 s doubling, at most 10 minutes apart) for the merchant’s retry window (default 3 days), with the same ' +
      '`webhook-id` and body and a fresh `webhook-timestamp` and signature; no answer within 10 s and a ' +
      'connection failure are retried the same way',
  },
};

function operation(
  type: CallbackEventType,
  version: 'current' | 'legacy',
  legacyType: LegacyCallbackType,
): ZodOpenApiOperationObject {
  const event = EVENTS[type];
  const legacy = version === 'legacy';
  const shape = legacy
    ? `The deprecated \`legacy\` body (the event's fields beside \`"type": "${legacyType}"\`), sent to merchants ` +
      'whose `callbackPayloadVersion` is `legacy`; move to the current version (`data` holds the same fields).'
    : `Payload version \`${CURRENT_CALLBACK_PAYLOAD_VERSION}\`: the Standard Webhooks payload ` +
      '`{ "type", "timestamp", "data" }`.';
  return {
    operationId: legacy ? `${event.operationId}Legacy` : event.operationId,
    tags: [CALLBACKS_TAG],
    summary: legacy ? `${event.summary} (legacy body)` : event.summary,
    description:
      `POSTed to ${event.to}, signed (Standard Webhooks). ${shape} Verify on the raw body before parsing it; ` +
      'deduplicate on `webhook-id`.',
    ...(legacy ? { deprecated: true } : {}),
    requestParams: { header: headers(legacy ? 'legacy' : CURRENT_CALLBACK_PAYLOAD_VERSION) },
    requestBody: {
      required: true,
      content: {
        'application/json': { schema: legacy ? legacyPayloadSchema(legacyType) : standardPayloadSchema(type) },
      },
    },
    responses: RESPONSES,
  };
}

/** The document's `webhooks`: `<type>` in the current payload version, then `<type> (legacy)`, deprecated. */
const EVENT_TYPES = Object.entries(CALLBACK_EVENT_TYPES) as [LegacyCallbackType, CallbackEventType][];
export const merchantCallbackWebhooks: ZodOpenApiPathsObject = Object.fromEntries([
  ...EVENT_TYPES.map(([legacyType, type]) => [type, { post: operation(type, 'current', legacyType) }] as const),
  ...EVENT_TYPES.map(
    ([legacyType, type]) => [`${type} (legacy)`, { post: operation(type, 'legacy', legacyType) }] as const,
  ),
]);
