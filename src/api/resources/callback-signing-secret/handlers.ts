import type { RequestHandler, Response } from 'express';
import type { Client } from '@temporalio/client';
import { readCallbackSecretGenerations, rotateCallbackSigningSecret } from '../../../client/merchant-secrets';
import type { MerchantDirectory, MerchantSettings } from '../../../config/merchants';
import { CALLBACK_SIGNING_SECRETS } from '../../../security/callback-signature';
import { derivesSecrets, shownSigningSecrets } from '../../../security/merchant-signing-secret';
import { DEFAULT_ROTATION_GRACE_MS, type SecretGeneration } from '../../../shared/merchant-secrets';
import type { Logger } from '../../../telemetry/logging';
import { merchantOf } from '../../authenticate';
import { recordAction, type AuditDeps } from '../../audit';
import { withStartDeadline, type StartDeadlineDeps } from '../../deadlines';
import { HttpError, parseInput } from '../../problem-details';
import { NoQuery, sendAs } from '../../openapi/describe';
import { CallbackSigningSecretSchema, RotateSecretBody } from './schemas';
import type { z } from 'zod';

export interface CallbackSigningSecretRouteDeps extends StartDeadlineDeps, AuditDeps {
  client: Client;
  taskQueue: string;
  /** Each merchant's signing keys: its own secrets, or the masters its secrets are derived from. */
  merchants: Pick<MerchantDirectory, 'resolve'>;
  logger: Logger;
}

/** `GET /merchant/callback-signing-secret`: the caller's secrets as they sign now. */
export function readSecret(deps: CallbackSigningSecretRouteDeps): RequestHandler {
  return async (req, res) => {
    parseInput(NoQuery, req.query, 'query');
    noStore(res);
    sendAs(res, 200, CallbackSigningSecretSchema, await readSigningSecret(deps, callerOf(res)));
  };
}

/** `POST /merchant/callback-signing-secret/rotate`: a new secret; the old one signs on for the grace period. */
export function rotateSecret(deps: CallbackSigningSecretRouteDeps): RequestHandler {
  return async (req, res) => {
    parseInput(NoQuery, req.query, 'query');
    // No body (or `{}`) rotates with the default grace period; a body that is not JSON is refused, not ignored.
    const hasContent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (hasContent && !req.is('application/json')) throw new HttpError(415, 'Content-Type must be application/json');
    const body = parseInput(RotateSecretBody, req.body ?? {}, 'body');
    const answer = await rotateSigningSecret(deps, callerOf(res), body.gracePeriod ?? DEFAULT_ROTATION_GRACE_MS, 'api');
    noStore(res);
    sendAs(res, 200, CallbackSigningSecretSchema, answer);
  };
}

/** The merchant's secrets as they sign now (the API's answer, the console's page). */
export type SigningSecretView = z.output<typeof CallbackSigningSecretSchema>;

/** The merchant's secrets, with its generations read from Temporal when they are derived. */
export async function readSigningSecret(
  deps: Pick<CallbackSigningSecretRouteDeps, 'client' | 'merchants'>,
  merchantId: string,
): Promise<SigningSecretView> {
  const merchant = deps.merchants.resolve(merchantId);
  const generations = derivesSecrets(merchant.callbacks)
    ? await readCallbackSecretGenerations(deps.client, merchant.id)
    : [];
  return view(merchant, generations);
}

/**
 * Rotates the merchant's derived secret (the previous one signs for `gracePeriodMs` more); 409 when the operator sets
 * its secrets. Recorded in the audit trail before the rotation (503 and no rotation when it cannot be); logged with
 * the generation, never a secret.
 */
export async function rotateSigningSecret(
  deps: CallbackSigningSecretRouteDeps,
  merchantId: string,
  gracePeriodMs: number,
  via: 'api' | 'console',
): Promise<SigningSecretView> {
  const merchant = deps.merchants.resolve(merchantId);
  if (!derivesSecrets(merchant.callbacks))
    throw new HttpError(
      409,
      merchant.callbacks.signingSecrets.length > 0
        ? `The operator sets this merchant's callback signing secrets (MERCHANTS_FILE callbackSigningSecrets, or ` +
            `${CALLBACK_SIGNING_SECRETS}): ask them to rotate them`
        : 'No callback signing secret is configured for this merchant: callbacks are not sent',
    );
  await recordAction(deps, {
    actor: { kind: 'merchant', name: merchant.id },
    action: 'callback-signing-secret.rotate',
    target: { kind: 'merchant', id: merchant.id },
    details: { gracePeriodMs, via },
  });
  const state = await withStartDeadline(deps, 'The rotation', () =>
    rotateCallbackSigningSecret(deps.client, merchant.id, { gracePeriodMs, taskQueue: deps.taskQueue }),
  );
  deps.logger.info(
    { merchant: merchant.id, generation: state.generations[0]?.generation, gracePeriodMs },
    'callback signing secret rotated',
  );
  return view(merchant, state.generations);
}

function callerOf(res: Response): string {
  const merchantId = merchantOf(res);
  if (merchantId === undefined) throw new Error('merchant route reached without an authenticated merchant');
  return merchantId;
}

/** Answers that carry a secret are kept by no cache. */
function noStore(res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
}

function view(merchant: MerchantSettings, generations: readonly SecretGeneration[]): SigningSecretView {
  const secrets = shownSigningSecrets(merchant.callbacks, merchant.id, generations, Date.now());
  return {
    merchantId: merchant.id,
    secret: secrets[0]?.secret ?? null,
    generation: secrets[0]?.generation ?? null,
    rotatable: derivesSecrets(merchant.callbacks),
    secrets,
  };
}
