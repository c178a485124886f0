/**
 * The operators' audit trail route (routes.ts): its query, answer and OpenAPI operation.
 * Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { AUDIT_ACTIONS, AUDIT_ACTOR_KINDS } from '../../../security/audit-chain';
import { errors, json, operatorKeyRequired, Tag, type ApiPaths } from '../../openapi/describe';

export const DEFAULT_AUDIT_PAGE_SIZE = 100;
export const MAX_AUDIT_PAGE_SIZE = 1_000;

const instant = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value))
  .describe('RFC 3339 date-time with a time zone, e.g. 2026-11-21T15:00:00Z');

/** GET /operator/audit query: every parameter optional; an unknown one is a 400. */
export const AuditQuerySchema = z
  .strictObject({
    since: instant.optional().describe('Records at or after this instant (inclusive)'),
    until: instant.optional().describe('Records before this instant (exclusive)'),
    action: z.enum(AUDIT_ACTIONS).optional().describe('One action'),
    actor: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 letters, digits and . _ -')
      .optional()
      .describe("The actor's name: an operator's or merchant's key name, or a tool's (`deploy`)"),
    actorKind: z.enum(AUDIT_ACTOR_KINDS).optional().describe('Operators, merchants or tools only'),
    after: z.coerce
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Records after this sequence number: the `next` of the previous page, with the same filters'),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(MAX_AUDIT_PAGE_SIZE)
      .default(DEFAULT_AUDIT_PAGE_SIZE)
      .describe(`Records per page: ${DEFAULT_AUDIT_PAGE_SIZE} unless given, at most ${MAX_AUDIT_PAGE_SIZE}`),
  })
  .meta({ id: 'AuditQuery' });

export const AuditRecordSchema = z
  .object({
    sequence: z.number().int().meta({ description: 'Its place in the chain: 1, 2, 3…' }),
    at: z.string().meta({ description: 'When it was appended (ISO 8601, UTC)' }),
    actor: z.object({
      kind: z.enum(AUDIT_ACTOR_KINDS),
      name: z.string().meta({ description: 'A key name (never the key) or a tool name' }),
    }),
    action: z.enum(AUDIT_ACTIONS),
    target: z.object({
      kind: z.string().meta({ description: 'namespace, application, merchant, consent or deployment' }),
      id: z.string(),
    }),
    details: z
      .record(z.string(), z.unknown())
      .meta({ description: "The action's particulars: never a secret or a customer's data" }),
    prevHash: z.string().meta({ description: "The previous record's hash (64 zeros for the first)" }),
    hash: z.string().meta({ description: 'SHA-256 (hex) of the canonical JSON of every other field' }),
  })
  .meta({ id: 'AuditRecord' });

export const AuditPageSchema = z
  .object({
    records: z.array(AuditRecordSchema).meta({ description: 'By sequence number, ascending' }),
    next: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'Send as `after` for the next page; null when this page is the last' }),
  })
  .meta({ id: 'AuditPage' });

/** The route's OpenAPI operation (gathered by src/api/openapi/document.ts). */
export const operatorAuditPaths: ApiPaths = {
  '/operator/audit': {
    get: {
      'x-listener': 'internal',
      operationId: 'listAuditRecords',
      tags: [Tag.Operations],
      summary: 'The audit trail: who decoded, resent, rotated, assigned or deployed what (operators)',
      description:
        'Records of the hash-chained audit trail (docs/security.md#audit-trail), oldest first, filtered and paged ' +
        'by sequence number. Reading it is not itself recorded. `npm run audit:verify` checks the chain.',
      security: operatorKeyRequired,
      requestParams: { query: AuditQuerySchema },
      responses: {
        '200': json(AuditPageSchema, 'A page of records'),
        ...errors(
          [400, 'An invalid or unknown parameter'],
          [401, "No key, or a key that is no operator's (a merchant's included)"],
          503,
        ),
      },
    },
  },
};
