/**
 * The callback signing secret routes (routes.ts): bodies, answers and their OpenAPI
 * operations. Imported by the route and by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { errors, json, merchantKeyRequired, NoQuery, Tag, type ApiPaths } from '../../openapi/describe';
import { DEFAULT_ROTATION_GRACE_MS, ROTATION_GRACE_BOUNDS } from '../../../shared/merchant-secrets';
import { formatDuration } from '../../../shared/application-settings';
import { durationField } from '../../settings-schemas';
import { ProblemType } from '../../problem-details';

const ShownSecretSchema = z
  .object({
    secret: z.string().meta({ description: 'A Standard Webhooks secret (`whsec_…`)' }),
    generation: z
      .number()
      .int()
      .nullable()
      .meta({ description: '1 until the first rotation, one more at each; null for a secret the operator sets' }),
    createdAt: z
      .string()
      .nullable()
      .meta({ description: 'When the rotation that made it happened (ISO 8601); null for generation 1' }),
    retiresAt: z
      .string()
      .nullable()
      .meta({ description: 'When it stops signing (ISO 8601): the end of its grace period; null for the newest' }),
  })
  .meta({ id: 'ShownSigningSecret' });

export const CallbackSigningSecretSchema = z
  .object({
    merchantId: z.string().meta({ description: 'The merchant whose key made the call: a key reaches its own only' }),
    secret: z
      .string()
      .nullable()
      .meta({ description: 'The secret to verify callbacks with (the newest); null when none is configured' }),
    generation: z.number().int().nullable().meta({ description: "The newest secret's generation" }),
    rotatable: z.boolean().meta({
      description:
        'True when the secret is derived for this merchant and rotated here; false when the operator sets it ' +
        '(MERCHANTS_FILE callbackSigningSecrets, or CALLBACK_SIGNING_SECRETS): a rotation here answers 409',
    }),
    secrets: z.array(ShownSecretSchema).meta({
      description:
        'Every secret that signs now, newest first: each callback carries one signature per secret in ' +
        '`webhook-signature`, so during a grace period both the new and the previous secret verify',
    }),
  })
  .meta({ id: 'CallbackSigningSecret' });

export const RotateSecretBody = z
  .strictObject({
    gracePeriod: durationField(ROTATION_GRACE_BOUNDS)
      .optional()
      .meta({
        description:
          `How long the replaced secret still signs (default ${formatDuration(DEFAULT_ROTATION_GRACE_MS)}); ` +
          `0 ends it at once (a leaked secret); at most ${formatDuration(ROTATION_GRACE_BOUNDS.max)}. Milliseconds, ` +
          'or a string such as "30s", "24h", "7d"',
      }),
  })
  .meta({ id: 'RotateCallbackSigningSecretRequest', description: 'Every field optional; no other field' });

const NO_STORE = { 'Cache-Control': { schema: { type: 'string' as const, const: 'no-store' } } };

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
export const callbackSigningSecretPaths: ApiPaths = {
  '/merchant/callback-signing-secret': {
    get: {
      'x-listener': 'internal',
      operationId: 'getCallbackSigningSecret',
      tags: [Tag.Secrets],
      summary: "The caller's callback signing secret (its own, never another merchant's)",
      description:
        'Callbacks are signed with Standard Webhooks; each merchant has its own secret, derived for it unless the ' +
        'operator set one. Verify with `secret`; during a grace period after a rotation `secrets` lists the previous ' +
        'one too. Never cached (`Cache-Control: no-store`).',
      security: merchantKeyRequired,
      requestParams: { query: NoQuery },
      responses: {
        '200': { ...json(CallbackSigningSecretSchema, "The caller's secrets"), headers: NO_STORE },
        ...errors([400, 'An unknown parameter'], 401, 429, 503),
      },
    },
  },
  '/merchant/callback-signing-secret/rotate': {
    post: {
      'x-listener': 'internal',
      operationId: 'rotateCallbackSigningSecret',
      tags: [Tag.Secrets],
      summary: "Rotate the caller's callback signing secret",
      description:
        'A new secret signs at once; the previous one goes on signing for the grace period (default ' +
        `${formatDuration(DEFAULT_ROTATION_GRACE_MS)}), so callbacks verify with either while the receiver moves to ` +
        'the new one. A second rotation within a grace period ends the oldest secret at once: at most two sign. Every ' +
        'API process and worker sees the rotation at once (it is kept in Temporal). No body, `{}`, or `{ gracePeriod }`.',
      security: merchantKeyRequired,
      requestParams: { query: NoQuery },
      requestBody: { required: false, content: { 'application/json': { schema: RotateSecretBody } } },
      responses: {
        '200': { ...json(CallbackSigningSecretSchema, 'Rotated: the secrets as they now sign'), headers: NO_STORE },
        ...errors(
          [400, 'An unknown parameter or field, or a grace period out of bounds'],
          401,
          [
            409,
            "The operator sets this merchant's secret (MERCHANTS_FILE or CALLBACK_SIGNING_SECRETS)",
            [ProblemType.Conflict],
          ],
          413,
          415,
          429,
          503,
        ),
      },
    },
  },
};
