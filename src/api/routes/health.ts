import { Router } from 'express';
import type { AppDeps } from '../app';

/** Liveness (the process answers), readiness (Temporal answers within a deadline) and Prometheus metrics. */
export function healthRoutes(deps: AppDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    try {
      await deps.checkTemporal();
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
