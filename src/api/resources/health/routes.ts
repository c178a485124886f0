import type { Request, Response, Router } from 'express';
import { authenticateOperator } from '../../authenticate';
import { tracedRouter } from '../../../telemetry/express-routes';
import { liveness, metrics, readiness, receiverReadiness, type OperatorRouteDeps } from './handlers';
import type { DrainSignals } from '../../drain';

/** Liveness: the process answers (both listeners; no dependency checked, so a Temporal outage restarts nothing). */
export function livenessRoutes(): Router {
  const router = tracedRouter();
  router.get('/healthz', liveness());
  return router;
}

/**
 * The public listener's readiness, for the load balancer in front of it: 200 unless the process is draining. It
 * checks no dependency: a path open to the internet must not be a lever on Temporal (the internal /readyz checks it,
 * and the receiver answers 503 itself when Temporal cannot take a signal).
 */
export function receiverReadinessRoutes(deps: { drain?: DrainSignals }): Router {
  const router = tracedRouter();
  router.get('/readyz', receiverReadiness(deps));
  return router;
}

/**
 * Readiness (Temporal answers within a deadline) and Prometheus metrics, on the internal listener only. Merchants
 * reach this listener, so what tells about other merchants or about Temporal is an operator's (OPERATOR_API_KEYS,
 * `Authorization: Bearer`): `/metrics` (every merchant's name and request volume) always, and `/readyz`'s details
 * (Temporal's error text) when a key is sent. A probe sends none and gets the status alone: 200 `{status:"ready"}`
 * or 503 `{status:"not_ready"}`.
 */
export function operatorRoutes(deps: OperatorRouteDeps): Router {
  const router = tracedRouter();
  const operator = authenticateOperator(deps);
  // A request with an Authorization header asks for the details: it must carry an operator key (401/403 otherwise).
  const detailsIfOperator = (req: Request, res: Response, next: (err?: unknown) => void) =>
    req.headers.authorization === undefined ? next() : operator(req, res, next);
  router.get('/readyz', detailsIfOperator, readiness(deps));
  router.get('/metrics', operator, metrics(deps));
  return router;
}
