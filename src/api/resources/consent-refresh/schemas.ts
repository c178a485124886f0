/**
 * The consent-refresh routes (routes.ts): bodies, answers and their OpenAPI operations.
 * Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { BANK_CODE_PATTERN, REFERENCE_PATTERN } from '../../../shared/ids';
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
import { formatDuration, SETTING_BOUNDS } from '../../../shared/application-settings';
import { durationField } from '../../settings-schemas';

const bounded = (name: 'refreshTimeoutMs' | 'refreshQuietPeriodMs'): string =>
  `milliseconds or "30s", "5m", "1h"; between ${formatDuration(SETTING_BOUNDS[name].min)} and ${formatDuration(SETTING_BOUNDS[name].max)}`;

export const StartRefreshBody = z
  .object({
    expectedBankCodes: z
      .array(z.string().regex(BANK_CODE_PATTERN, 'must be 1 to 64 printable ASCII characters, no spaces'))
      .max(100, 'must list at most 100 banks')
      .optional()
      .meta({
        description: 'Banks expected to report: the refresh ends once all did (an empty list: the quiet period)',
      }),
    timeout: durationField(SETTING_BOUNDS.refreshTimeoutMs)
      .optional()
      .meta({
        description: `Upper bound of the whole refresh (default REFRESH_TIMEOUT); ${bounded('refreshTimeoutMs')}`,
      }),
    quietPeriod: durationField(SETTING_BOUNDS.refreshQuietPeriodMs)
      .optional()
      .meta({
        description: `Ends the refresh this long after the last bank reported (default REFRESH_QUIET_PERIOD); ${bounded('refreshQuietPeriodMs')}`,
      }),
  })
  .strict()
  .meta({ id: 'StartRefreshRequest', description: 'Every field optional; no other field' });

/** 202 of POST /consents/:consentId/refresh. */
export const RefreshStartedSchema = z
  .object({
    consentId: z.string(),
    workflowId: z.string(),
    taskId: z.string().meta({ description: "The bank's refresh task id (the same for every caller of one run)" }),
  })
  .meta({ id: 'RefreshStarted' });

const BankRefreshResultSchema = z
  .object({
    bankCode: z.string(),
    bankName: z.string(),
    taskStatus: z.string(),
    succeeded: z.boolean(),
    accounts: z.array(z.object({ accountId: z.string(), eventType: z.string() })),
    at: z.string().meta({ description: 'When the report was recorded (ISO 8601)' }),
    late: z.literal(true).optional().meta({ description: 'Reported after the refresh had closed' }),
  })
  .meta({ id: 'BankRefreshResult' });

/** GET /consents/:consentId/refresh: the latest refresh's progress, amended by its late bank reports. */
export const RefreshProgressSchema = z
  .object({
    consentId: z.string(),
    taskId: z.string().nullable().meta({ description: 'Null until PUT /refresh answered' }),
    done: z.boolean(),
    banks: z.array(BankRefreshResultSchema),
    missing: z.array(z.string()).meta({ description: 'Expected (or learned) banks that have not reported' }),
    expectedBankCodes: z.array(z.string()).optional(),
    staleEvents: z.number().int(),
    duplicateEvents: z.number().int(),
    endedBy: z.enum(['all-reported', 'quiet-period', 'timeout']).optional(),
    error: z.string().optional().meta({ description: 'Set (with done) when the bank did not start the task' }),
    knownBankCodes: z.array(z.string()).optional(),
    handedOffEvents: z.number().int().optional(),
    lateReports: z.number().int().meta({ description: 'Banks of this task that reported late, merged into banks' }),
  })
  .meta({ id: 'RefreshProgress' });

/** The consent in the path: a value outside the pattern is a 400. */
export const ConsentParams = z.strictObject({
  consentId: z
    .string()
    .regex(REFERENCE_PATTERN, 'must be 1 to 128 letters, digits and . _ ~ - (not "." or "..")')
    .meta({ description: 'The consent id at the bank', example: 'consent-42' }),
});

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const consentRefreshPaths: ApiPaths = {
  '/consents/{consentId}/refresh': {
    post: {
      'x-listener': 'internal',
      operationId: 'startConsentRefresh',
      tags: [Tag.Consents],
      summary: 'Start a refresh of the consent, or attach to the running one',
      description:
        'Answers once the bank gave the task id (PUT /refresh). A second request while a refresh runs attaches to ' +
        "it and gets the same taskId (its own inputs are ignored). Without expectedBankCodes, the banks learned from the consent's earlier refreshes are awaited. " +
        'No body is the same as `{}`. Body up to 16 KiB.',
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      requestBody: { required: false, content: { 'application/json': { schema: StartRefreshBody } } },
      responses: {
        '202': {
          ...json(RefreshStartedSchema, 'Started, or attached to the running refresh'),
          headers: { Location: LOCATION_HEADER("The refresh's progress: /consents/{consentId}/refresh") },
        },
        ...errors(
          [400, 'Invalid consentId, an unknown parameter or field, or a body that is not JSON (`errors` names each)'],
          401,
          [404, "The consent is another merchant's"],
          [409, "A refresh started by the consent's previous owner still runs: retry after Retry-After"],
          413,
          415,
          STARTS_REFUSED,
          [502, 'The bank did not start the refresh'],
          [503, 'Temporal unavailable, or the bank did not answer within the start deadline: retry the same request'],
        ),
      },
    },
    get: {
      'x-listener': 'internal',
      operationId: 'getConsentRefresh',
      tags: [Tag.Consents],
      summary: "Progress of the consent's latest refresh",
      security: merchantKeyRequired,
      requestParams: { path: ConsentParams, query: NoQuery },
      responses: {
        '200': json(RefreshProgressSchema, 'Banks reported so far (late reports merged), missing ones, done'),
        ...errors(
          [400, 'Invalid consentId, or an unknown parameter'],
          401,
          [404, "No refresh was ever started for this consent, or the consent is another merchant's"],
          429,
          503,
        ),
      },
    },
  },
};
