import type { Router } from 'express';
import type { AppDeps } from '../app';
import { hardBound } from '../errors';
import { tracedRouter } from '../../telemetry/express-routes';

/** /readyz answers within this, whatever Temporal does (its own check has a 2 s gRPC deadline). */
export const READINESS_BOUND_MS = 2_000;

/** Liveness: the process answers (both listeners; no dependency checked, so a Temporal outage restarts nothing). */
export function livenessRoutes(): Router {
  const router = tracedRouter();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  return router;
}

/**
 * Readiness (Temporal answers within a deadline) and Prometheus metrics, on the internal listener only. No API key:
 * probes and scrapers cannot send one, and they tell nothing about any merchant's data.
 */
export function operatorRoutes(deps: AppDeps): Router {
  const router = tracedRouter();
  router.get('/readyz', async (_req, res) => {
    try {
      await hardBound(deps.checkTemporal(), READINESS_BOUND_MS, 'Temporal');
      res.json({ status: 'ready', temporal: 'ok' });
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'readiness check failed');
      res.status(503).json({ status: 'not_ready', temporal: 'unreachable', message: (err as Error).message });
    }
  });
  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}
