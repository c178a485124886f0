/**
 * The callbacks' bodies (src/activities/callback-payload.ts) against the OpenAPI document's `webhooks`
 * (src/api/openapi/merchant-callbacks.ts): each event, built by the workflows' own builders where they have
 * one, in each payload version, matches the schema the document gives it (ajv, JSON Schema 2020-12).
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import {
  CALLBACK_EVENT_TYPES,
  CALLBACK_PAYLOAD_VERSIONS,
  callbackBody,
  CURRENT_CALLBACK_PAYLOAD_VERSION,
  type CallbackPayloadVersion,
} from '../../src/activities/callback-payload';
import { createOpenApiDocument } from '../../src/api/openapi/document';
import { MERCHANT_CALLBACK_EVENTS } from '../../src/shared/metric-names';
import { lateBankReportEvent } from '../../src/workflows/late-account-events/inbox';
import { transactionsChangedEvent } from '../../src/workflows/transaction-events/batches';

const document = createOpenApiDocument() as unknown as {
  webhooks: Record<
    string,
    {
      post: {
        deprecated?: boolean;
        parameters: { name: string; in: string; required?: boolean; schema: { const?: string } }[];
        requestBody: { content: { 'application/json': { schema: { $ref: string } } } };
      };
    }
  >;
};
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(document, 'openapi.json');

/** Every error of `body` against the schema of the document's webhook `name` (none: it matches). */
function errorsOf(name: string, body: string): string[] {
  const webhook = document.webhooks[name];
  if (!webhook) return [`no webhook ${name}`];
  const validate = ajv.getSchema(`openapi.json${webhook.post.requestBody.content['application/json'].schema.$ref}`)!;
  return validate(JSON.parse(body)) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

const AT = '2026-11-25T10:00:00.000Z';
const LATER = new Date('2026-11-25T10:05:00.000Z');

/** One event of each type, as the workflows hand them to notifyMerchant. */
const EVENTS = {
  // src/workflows/finance-application/merchant-notification.ts (built inline there)
  'finance-application.status-changed': {
    type: 'finance-application.status-changed',
    merchantReference: 'order-4711',
    financeApplicationId: 'fa-1',
    status: 'APPROVED',
    at: AT,
    source: 'webhook',
  },
  'finance-application.duplicate-detected': {
    type: 'finance-application.duplicate-detected',
    merchantReference: 'order-4711',
    financeApplicationId: 'fa-1',
    duplicateFinanceApplicationId: 'fa-2',
    at: AT,
  },
  transactionsChanged: {
    ...transactionsChangedEvent({
      consentId: 'c-1',
      eventType: 'NEW',
      accountIds: ['a-1', 'a-2'],
      events: 3,
      batch: 1,
    }),
  },
  'consent.late-bank-report': {
    ...lateBankReportEvent({
      consentId: 'c-1',
      taskId: 't-1',
      bankCode: 'BBBB',
      bankName: 'B Bank',
      taskStatus: 'FINISHED',
      succeeded: true,
      accounts: [{ accountId: 'a-1', eventType: 'UPDATED' }],
      at: AT,
      reason: 'refresh-closed',
      delivery: 'pending',
    }),
  },
} satisfies Record<keyof typeof CALLBACK_EVENT_TYPES, Record<string, unknown>>;

describe('callback payloads', () => {
  it('names a dotted type for every event the workflows send (each callback metric label)', () => {
    expect(Object.keys(CALLBACK_EVENT_TYPES).sort()).toEqual([...MERCHANT_CALLBACK_EVENTS].sort());
    for (const type of Object.values(CALLBACK_EVENT_TYPES))
      expect(type).toMatch(/^[a-z]+(-[a-z]+)*(\.[a-z]+(-[a-z]+)*)+$/);
  });

  it.each(Object.entries(EVENTS))(
    '%s: the current version is { type, timestamp, data } and matches its webhook’s schema',
    (legacyType, event) => {
      const type = CALLBACK_EVENT_TYPES[legacyType as keyof typeof CALLBACK_EVENT_TYPES];
      const body = callbackBody(event, CURRENT_CALLBACK_PAYLOAD_VERSION, LATER);
      const { type: _legacy, ...data } = event;
      expect(JSON.parse(body)).toEqual({ type, timestamp: 'at' in event ? AT : LATER.toISOString(), data });
      expect(errorsOf(type, body)).toEqual([]);
      // Not the legacy shape: the deprecated entry refuses it (the two are told apart by their schemas too).
      expect(errorsOf(`${type} (legacy)`, body)).not.toEqual([]);
    },
  );

  it.each(Object.entries(EVENTS))(
    '%s: legacy is today’s body, byte for byte, and matches the deprecated webhook’s schema',
    (legacyType, event) => {
      const type = CALLBACK_EVENT_TYPES[legacyType as keyof typeof CALLBACK_EVENT_TYPES];
      const body = callbackBody(event, 'legacy', LATER);
      expect(body).toBe(JSON.stringify(event));
      expect(errorsOf(`${type} (legacy)`, body)).toEqual([]);
      expect(errorsOf(type, body)).not.toEqual([]);
    },
  );

  it('a schema refuses a body missing a field, or with a timestamp that is no date-time', () => {
    const type = 'finance-application.status-changed';
    const good = JSON.parse(callbackBody(EVENTS[type], '2026-11-25', LATER)) as { data: Record<string, unknown> };
    const { status: _status, ...withoutStatus } = good.data;
    expect(errorsOf(type, JSON.stringify({ ...good, data: withoutStatus }))).toEqual([
      "/data must have required property 'status'",
    ]);
    expect(errorsOf(type, JSON.stringify({ ...good, timestamp: 'yesterday' }))).not.toEqual([]);
  });

  it('describes each event in each version, the version as the header’s constant, the legacy ones deprecated', () => {
    const entries = Object.entries(document.webhooks).map(([name, { post }]) => [
      name,
      post.parameters.find((p) => p.name === 'callback-payload-version')?.schema.const,
      post.deprecated ?? false,
    ]);
    const expected = CALLBACK_PAYLOAD_VERSIONS.flatMap((version: CallbackPayloadVersion) =>
      Object.values(CALLBACK_EVENT_TYPES).map((type) =>
        version === 'legacy' ? [`${type} (legacy)`, 'legacy', true] : [type, version, false],
      ),
    );
    expect(entries).toEqual(expected);
    for (const { post } of Object.values(document.webhooks)) {
      expect(post.parameters.filter((p) => p.in === 'header' && p.required).map((p) => p.name)).toEqual([
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
        'idempotency-key',
        'callback-payload-version',
      ]);
    }
  });

  it('an event with an unknown type keeps it (the activity never drops a callback for its name)', () => {
    expect(JSON.parse(callbackBody({ type: 'something.new', x: 1 }, '2026-11-25', LATER))).toEqual({
      type: 'something.new',
      timestamp: LATER.toISOString(),
      data: { x: 1 },
    });
  });
});
