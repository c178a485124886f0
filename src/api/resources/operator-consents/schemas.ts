/**
 * The operators' consent routes (routes.ts): bodies, answers and their OpenAPI operations.
 * Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { MERCHANT_ID_PATTERN } from '../../../shared/ids';
import { ProblemType } from '../../problem-details';
import {
  errors,
  json,
  LOCATION_HEADER,
  NoQuery,
  operatorKeyRequired,
  Tag,
  type ApiPaths,
} from '../../openapi/describe';
import { ConsentParams } from '../consent-refresh/schemas';

/** PUT's body: the merchant to give the consent to. */
export const AssignConsentBody = z
  .strictObject({
    merchantId: z
      .string()
      .regex(MERCHANT_ID_PATTERN, 'must be 1 to 64 letters, digits and . _ -')
      .meta({ description: 'The merchant: its name in MERCHANT_API_KEYS', example: 'shop-a' }),
    reassign: z.boolean().optional().meta({
      description:
        "true: take the consent from the merchant that owns it (its claim is released first); absent or false: 409 when it is another merchant's",
    }),
  })
  .meta({ id: 'AssignConsentRequest' });

/** PUT's answer. */
export const ConsentAssignedSchema = z
  .object({
    consentId: z.string(),
    merchantId: z.string().meta({ description: 'The owner now' }),
    assignedNow: z.boolean().meta({ description: "False when the consent was already this merchant's" }),
    previousMerchantId: z
      .string()
      .nullable()
      .meta({ description: 'The merchant it was taken from (`reassign`), or null' }),
  })
  .meta({ id: 'ConsentAssigned' });

const ConsentClaimConflictSchema = z
  .object({
    merchantId: z.string().meta({ description: 'The merchant whose claim or refresh was refused' }),
    firstAt: z.string().meta({ description: 'Its first refused claim (ISO 8601)' }),
    lastAt: z.string().meta({ description: 'Its latest recorded one (ISO 8601)' }),
    count: z.number().int().meta({ description: 'Refused claims recorded (repeats are recorded now and then only)' }),
  })
  .meta({ id: 'ConsentClaimConflict' });

/** GET's answer: the consent's claim as an operator sees it. */
export const OperatorConsentSchema = z
  .object({
    consentId: z.string(),
    merchantId: z.string().meta({ description: 'The owner' }),
    claimedAt: z.string().meta({ description: 'When it was assigned or claimed (ISO 8601)' }),
    assignedBy: z
      .string()
      .nullable()
      .meta({ description: 'The operator (key name) that assigned it; null: the merchant claimed it' }),
    conflicts: z
      .array(ConsentClaimConflictSchema)
      .meta({ description: "Other merchants' refused claims of it (`ConsentClaimConflict` names the first)" }),
  })
  .meta({ id: 'OperatorConsent' });

/** DELETE's answer. */
export const ConsentReleasedSchema = z
  .object({
    consentId: z.string(),
    merchantId: z.string().meta({ description: 'The merchant that owned it' }),
    released: z.literal(true),
  })
  .meta({ id: 'ConsentReleased' });

const operatorErrors = (...more: Parameters<typeof errors>) =>
  errors(
    [400, 'Invalid consentId or body, an unknown parameter, or a merchant not in MERCHANT_API_KEYS'],
    401,
    [403, "A merchant's key: an operator key (OPERATOR_API_KEYS) is required"],
    ...more,
    503,
  );

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const operatorConsentPaths: ApiPaths = {
  '/operator/consents/{consentId}': {
    put: {
      'x-listener': 'internal',
      operationId: 'assignConsent',
      tags: [Tag.Operations],
      summary: 'Assign the consent to a merchant (operators; idempotent)',
      description:
        'The bank does not say which merchant a consent was made for: an operator who knows assigns it ' +
        '(docs/decisions/0046-consents-assigned-by-an-operator.md). Its account webhooks then reach that merchant ' +
        "only. A consent that is another merchant's is a 409 naming the owner, unless `reassign` is true.",
      security: operatorKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      requestBody: { required: true, content: { 'application/json': { schema: AssignConsentBody } } },
      responses: {
        '201': {
          ...json(ConsentAssignedSchema, 'Assigned by this call'),
          headers: { Location: LOCATION_HEADER('The assignment: /operator/consents/{consentId}') },
        },
        '200': json(ConsentAssignedSchema, "Already this merchant's"),
        ...operatorErrors([409, "Another merchant's consent (`reassign` not set)", [ProblemType.Conflict]], 413, 415),
      },
    },
    get: {
      'x-listener': 'internal',
      operationId: 'getConsentAssignment',
      tags: [Tag.Operations],
      summary: "The consent's owner, how it got it, and other merchants' refused claims (operators)",
      security: operatorKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      responses: {
        '200': json(OperatorConsentSchema, "The consent's claim"),
        ...operatorErrors([404, 'No merchant owns it']),
      },
    },
    delete: {
      'x-listener': 'internal',
      operationId: 'releaseConsentAssignment',
      tags: [Tag.Operations],
      summary: 'Release the consent, whoever owns it (operators): its account webhooks start nothing until reassigned',
      security: operatorKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      responses: {
        '200': json(ConsentReleasedSchema, 'Released'),
        ...operatorErrors([404, 'No merchant owns it']),
      },
    },
  },
};
