import type { Request, Response, Router } from 'express';
import type { Logger } from '../../../telemetry/logging';
import type { Metrics } from '../../metrics';
import type { DrainSignals } from '../../drain';
import { authenticateOperator, type AuthenticateOperatorDeps } from '../../authenticate';
import { hardBound } from '../../deadlines';
import { sendAs } from '../../openapi/describe';
import { tracedRouter } from '../../../telemetry/express-routes';
import {
  LivenessSchema,
  ReadySchema,
  NotReadySchema,
  NotReadyStatusSchema,
  DrainingSchema,
  ReceiverReadySchema,
} from './schemas';

const DRAINING_MESSAGE = 'This process is shutting down: send new requests to another instance';

/** Answers 503 `draining` and returns true while the process drains. */
function answeredDraining(res: Response, drain: DrainSignals | undefined): boolean {
  if (!drain?.draining) return false;
  sendAs(res, 503, DrainingSchema, { status: 'draining', message: DRAINING_MESSAGE });
  return true;
}

/** /readyz answers within this, whatever Temporal does (its own check has a 2 s gRPC deadline). */
export const READINESS_BOUND_MS = 2_000;

/** Liveness: the process answers (both listeners; no dependency checked, so a Temporal outage restarts nothing). */
export function livenessRoutes(): Router {
  const router = tracedRouter();
  router.get('/healthz', (_req, res) => {
    sendAs(res, 200, LivenessSchema, { status: 'ok' });
  });
  return router;
}

/**
 * The public listener's readiness, for the load balancer in front of it: 200 unless the process is draining. It
 * checks no dependency: a path open to the internet must not be a lever on Temporal (the internal /readyz checks it,
 * and the receiver answers 503 itself when Temporal cannot take a signal).
 */
export function receiverReadinessRoutes(deps: { drain?: DrainSignals }): Router {
  const router = tracedRouter();
  router.get('/readyz', (_req, res) => {
    if (answeredDraining(res, deps.drain)) return;
    sendAs(res, 200, ReceiverReadySchema, { status: 'ready' });
  });
  return router;
}

export interface OperatorRouteDeps extends AuthenticateOperatorDeps {
  /** Resolves when Temporal answers. */
  checkTemporal(): Promise<void>;
  /** Both listeners' metrics, served at /metrics; `operatorAuth` counts the operator keys presented. */
  metrics: AuthenticateOperatorDeps['metrics'] & Pick<Metrics, 'registry'>;
  logger: Logger;
  /** The process's shutdown: /readyz answers 503 while draining. */
  drain?: DrainSignals;
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
  router.get('/readyz', detailsIfOperator, async (req, res) => {
    if (answeredDraining(res, deps.drain)) return;
    const detailed = req.headers.authorization !== undefined;
    try {
      await hardBound(deps.checkTemporal(), READINESS_BOUND_MS, 'Temporal');
      if (detailed) sendAs(res, 200, ReadySchema, { status: 'ready', temporal: 'ok' });
      else sendAs(res, 200, ReceiverReadySchema, { status: 'ready' });
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'readiness check failed');
      if (!detailed) sendAs(res, 503, NotReadyStatusSchema, { status: 'not_ready' });
      else
        sendAs(res, 503, NotReadySchema, {
          status: 'not_ready',
          temporal: 'unreachable',
          message: (err as Error).message,
        });
    }
  });
  router.get('/metrics', operator, async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}
