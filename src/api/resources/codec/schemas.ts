/**
 * The codec endpoint (routes.ts): its bodies and its OpenAPI operations. Imported by the route and by
 * src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { ProblemType } from '../../problem-details';
import {
  errors,
  json,
  operatorKeyRequired,
  Tag,
  type ApiOperation,
  type ApiPaths,
  type ErrorEntry,
} from '../../openapi/describe';

const base64 = z.string().regex(/^(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}$/, 'must be base64');
export const CodecBodySchema = z
  .object({
    // Absent or null means none: proto3 JSON leaves an empty list out, so the Temporal CLI sends `{}` for a query
    // without arguments (`temporal workflow query`).
    payloads: z
      .array(
        z.object({
          metadata: z.record(z.string(), base64).nullish(),
          data: base64.nullish(),
        }),
      )
      .nullish(),
  })
  .meta({
    id: 'CodecPayloads',
    description: 'Payloads in proto3 JSON: metadata values and data in base64; `payloads` absent means none',
  });

/** The answer: the same shape, every field present. */
export const CodecAnswerSchema = z
  .object({ payloads: z.array(z.object({ metadata: z.record(z.string(), base64), data: base64 })) })
  .meta({ id: 'CodecPayloadsOut' });

const codecOperation = (operation: 'encode' | 'decode'): ApiOperation => ({
  'x-listener': 'internal',
  operationId: `${operation}Payloads`,
  tags: [Tag.Codec],
  summary: `${operation === 'decode' ? 'Decrypt' : 'Encrypt'} payloads (Temporal remote codec protocol)`,
  description:
    'For the Temporal Web UI and CLI (`--codec-endpoint <url>/codec`). `X-Namespace` selects nothing (one key ring ' +
    'for every namespace); a decode records it in the audit trail with the operator and the payload count, before ' +
    'answering (503 when the trail cannot be written: nothing decoded is sent). ' +
    'CORS: origins in CODEC_CORS_ORIGINS; the preflight (OPTIONS) is answered without a key. Body up to 16 MiB. ' +
    "An operator key (OPERATOR_API_KEYS) is required: any other key, a merchant's included, answers 401 as an " +
    'unknown one, and counts against the address (429 after too many).',
  security: operatorKeyRequired,
  requestBody: { required: true, content: { 'application/json': { schema: CodecBodySchema } } },
  responses: {
    '200': json(CodecAnswerSchema, `The payloads, ${operation}d`),
    ...errors(
      [400, 'Invalid body, or a payload that cannot be decrypted (unknown key id, altered data)'],
      [401, 'No key, or not an operator key (a merchant key included)'],
      [403, 'An origin not in CODEC_CORS_ORIGINS'],
      413,
      415,
      [429, 'Too many wrong keys from this address: retry after Retry-After', [ProblemType.TooManyWrongKeys]],
      ...(operation === 'decode'
        ? [[503, 'The audit trail cannot be written: retry after Retry-After'] as ErrorEntry]
        : []),
    ),
  },
});

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const codecPaths: ApiPaths = {
  '/codec/decode': { post: codecOperation('decode') },
  '/codec/encode': { post: codecOperation('encode') },
};
