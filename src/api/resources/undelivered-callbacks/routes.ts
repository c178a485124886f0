import express, { type Router } from 'express';
import { tracedRouter } from '../../../telemetry/express-routes';
import {
  listOwnUndelivered,
  listUndelivered,
  readResend,
  startRangeResend,
  type UndeliveredCallbackRouteDeps,
} from './handlers';

export { UNDELIVERED_CALLBACKS_PATH } from './schemas';

/**
 * Undelivered merchant callbacks (docs/merchant-api.md#undelivered-callbacks), read from each merchant's ledger
 * workflow (docs/decisions/0049-undelivered-callbacks-ledger.md):
 * - `GET /callbacks/undelivered` the caller's own, filtered and paged; the merchant is the key's, no route names one;
 * - `POST /callbacks/resend` `{ since, until, type? }` → 202 a bulk resend of the caller's given-up callbacks of the
 *   range (recorded in the audit trail first); `GET /callbacks/resend?since=&until=` its progress;
 * - `GET /operator/callbacks/undelivered?merchant=` any merchant's, or every merchant's (behind an operator key).
 */
export function undeliveredCallbackRoutes(deps: UndeliveredCallbackRouteDeps): Router {
  const router = tracedRouter();

  // Described in schemas.ts.
  router.get('/callbacks/undelivered', listOwnUndelivered(deps));

  router.post('/callbacks/resend', express.json({ limit: '1kb' }), startRangeResend(deps));

  router.get('/callbacks/resend', readResend(deps));

  router.get('/operator/callbacks/undelivered', listUndelivered(deps));

  return router;
}
