import type { Router } from 'express';
import type { AppDeps } from '../app';
import { z } from 'zod';
import { hardBound } from '../errors';
import { json, open, sendAs, Tag, type ApiPaths } from '../openapi/describe';

export const LivenessSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Liveness' });
export const ReadySchema = z.object({ status: z.literal('ready'), temporal: z.literal('ok') }).meta({ id: 'Ready' });
export const NotReadySchema = z
  .object({ status: z.literal('not_ready'), temporal: z.literal('unreachable'), message: z.string() })
  .meta({ id: 'NotReady' });
import { tracedRouter } from '../../telemetry/express-routes';

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
 * Readiness (Temporal answers within a deadline) and Prometheus metrics, on the internal listener only. No API key:
 * probes and scrapers cannot send one, and they tell nothing about any merchant's data.
 */
export function operatorRoutes(deps: AppDeps): Router {
  const router = tracedRouter();
  router.get('/readyz', async (_req, res) => {
    try {
      await hardBound(deps.checkTemporal(), READINESS_BOUND_MS, 'Temporal');
      sendAs(res, 200, ReadySchema, { status: 'ready', temporal: 'ok' });
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'readiness check failed');
      sendAs(res, 503, NotReadySchema, {
        status: 'not_ready',
        temporal: 'unreachable',
        message: (err as Error).message,
      });
    }
  });
  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}

/** OpenAPI description of this module's routes (src/api/openapi/document.ts). */
export const healthPaths: ApiPaths = {
  '/healthz': {
    get: {
      'x-listener': 'both',
      operationId: 'liveness',
      tags: [Tag.Operations],
      summary: 'Liveness: the process answers (served by both listeners; no dependency checked)',
      security: open,
      responses: { '200': json(LivenessSchema, 'Alive') },
    },
  },
  '/readyz': {
    get: {
      'x-listener': 'internal',
      operationId: 'readiness',
      tags: [Tag.Operations],
      summary: 'Readiness: Temporal answers within 2 s',
      security: open,
      responses: {
        '200': json(ReadySchema, 'Ready'),
        '503': json(NotReadySchema, 'Temporal did not answer'),
      },
    },
  },
  '/metrics': {
    get: {
      'x-listener': 'internal',
      operationId: 'metrics',
      tags: [Tag.Operations],
      summary: 'Prometheus metrics of both listeners (text exposition format)',
      security: open,
      responses: {
        '200': { description: 'Metrics', content: { 'text/plain': { schema: z.string() } } },
      },
    },
  },
};
