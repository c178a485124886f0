/**
 * The consent routes (routes.ts): bodies, answers and their OpenAPI operations. Imported by the
 * route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import {
  errors,
  json,
  LOCATION_HEADER,
  merchantKeyRequired,
  NoQuery,
  STARTS_REFUSED,
  Tag,
  type ApiPaths,
} from '../../openapi/describe';
import { ConsentParams } from '../consent-refresh/schemas';

/** A consent as its owner sees it. */
/** The errors of a route on the caller's own consent (read, release). */
const ownConsentErrors = errors(
  [400, 'Invalid consentId, or an unknown parameter'],
  401,
  [404, "Not claimed, or another merchant's"],
  429,
  503,
);

export const ConsentSchema = z
  .object({
    consentId: z.string(),
    merchantId: z.string().meta({ description: 'The owner: the merchant whose key made the call' }),
    claimed: z.boolean().meta({ description: 'False once released' }),
  })
  .meta({ id: 'Consent' });

/** PUT takes no body; `{}` is accepted as none. */
export const ClaimBody = z
  .strictObject({})
  .meta({ id: 'ClaimConsentRequest', description: 'No field: `{}` or no body' });

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const consentPaths: ApiPaths = {
  '/consents/{consentId}': {
    put: {
      'x-listener': 'internal',
      operationId: 'claimConsent',
      tags: [Tag.Consents],
      summary: 'Claim the consent for the calling merchant, or confirm it is its own (idempotent)',
      description:
        'Account webhooks carry only the consent id: a consent belongs to the merchant its claim names, and only its ' +
        'owner receives its transactionEvents and late bank reports. Who gives a consent its owner is ' +
        'CONSENT_ASSIGNMENT (docs/decisions/0046-consents-assigned-by-an-operator.md): with several merchants, by ' +
        'default, an operator assigns it (`PUT /operator/consents/{consentId}`) and this route only confirms a ' +
        "consent that is the caller's (404 otherwise); where merchants claim (one merchant, or CONSENT_ASSIGNMENT=" +
        "merchant), a free consent is claimed here or by its first refresh. Another merchant's consent answers " +
        'exactly as an unknown one. No body (or `{}`).',
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      requestBody: { required: false, content: { 'application/json': { schema: ClaimBody } } },
      responses: {
        '201': {
          ...json(ConsentSchema, 'Claimed by this call'),
          headers: { Location: LOCATION_HEADER('The consent: /consents/{consentId}') },
        },
        '200': json(ConsentSchema, "Already the caller's"),
        ...errors(
          [400, 'Invalid consentId, an unknown parameter, or a body other than {}'],
          401,
          [404, "Another merchant's consent, or (where operators assign consents) one not the caller's"],
          413,
          415,
          STARTS_REFUSED,
          503,
        ),
      },
    },
    get: {
      'x-listener': 'internal',
      operationId: 'getConsent',
      tags: [Tag.Consents],
      summary: "The consent, when it is the caller's",
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      responses: {
        '200': json(ConsentSchema, "The caller's consent"),
        ...ownConsentErrors,
      },
    },
    delete: {
      'x-listener': 'internal',
      operationId: 'releaseConsent',
      tags: [Tag.Consents],
      summary: 'Release the consent: its account webhooks start nothing until it is assigned or claimed again',
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      responses: {
        '200': json(ConsentSchema, 'Released'),
        ...ownConsentErrors,
      },
    },
  },
};
