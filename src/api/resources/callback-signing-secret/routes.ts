import express, { type Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import { readSecret, rotateSecret, type CallbackSigningSecretRouteDeps } from './handlers';

/** Where the caller's key may reach its own callback signing secret, and only its own (mounted behind `authenticate`). */
export const CALLBACK_SIGNING_SECRET_PATH = '/merchant';

/**
 * The merchant's callback signing secret (docs/merchant-api.md#callback-signing-secret), always the caller's own: the
 * merchant is the key's, no route names one.
 * - `GET /merchant/callback-signing-secret` → 200 the secrets that sign now (derived from the master and the
 *   merchant's generations, read with one describe), newest first;
 * - `POST /merchant/callback-signing-secret/rotate` `{ gracePeriod? }` → 200 the same after a rotation (one
 *   update-with-start of the merchant's merchantSecretsWorkflow); 409 when the operator sets the secret.
 * Answers are never cached (they carry secrets); no secret is logged.
 */
export function callbackSigningSecretRoutes(deps: CallbackSigningSecretRouteDeps): Router {
  const router = tracedRouter();

  // Described in schemas.ts.
  router.get('/merchant/callback-signing-secret', readSecret(deps));

  router.post('/merchant/callback-signing-secret/rotate', express.json({ limit: '1kb' }), rotateSecret(deps));

  return router;
}
