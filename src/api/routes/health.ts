import type { Response, Router } from 'express';
import type { AppDeps } from '../app';
import type { DrainSignals } from '../drain';
import { z } from 'zod';
import { hardBound } from '../deadlines';
import { json, open, sendAs, Tag, type ApiPaths } from '../openapi/describe';

export const LivenessSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Liveness' });
export const ReadySchema = z.object({ status: z.literal('ready'), temporal: z.literal('ok') }).meta({ id: 'Ready' });
export const NotReadySchema = z
  .object({ status: z.literal('not_ready'), temporal: z.literal('unreachable'), message: z.string() })
  .meta({ id: 'NotReady' });
/** 503 from SIGTERM on (both listeners): the process is shutting down; a load balancer sends it nothing new. */
export const DrainingSchema = z.object({ status: z.literal('draining'), message: z.string() }).meta({ id: 'Draining' });
/** The public listener's readiness: this process takes webhooks (it does not call Temporal for the internet). */
export const ReceiverReadySchema = z.object({ status: z.literal('ready') }).meta({ id: 'ReceiverReady' });
import { tracedRouter } from '../../telemetry/express-routes';

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
export function receiverReadinessRoutes(deps: Pick<AppDeps, 'drain'>): Router {
  const router = tracedRouter();
  router.get('/readyz', (_req, res) => {
    if (answeredDraining(res, deps.drain)) return;
    sendAs(res, 200, ReceiverReadySchema, { status: 'ready' });
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
    if (answeredDraining(res, deps.drain)) return;
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
      'x-listener': 'both',
      operationId: 'readiness',
      tags: [Tag.Operations],
      summary: 'Readiness: internal listener, Temporal answers within 2 s; public listener, the process takes webhooks',
      description:
        'Both listeners answer 503 `draining` from SIGTERM on, while still serving for SHUTDOWN_DRAIN_DELAY: a load ' +
        'balancer stops sending new requests before the listeners close. The public listener checks nothing else.',
      security: open,
      responses: {
        '200': json(z.union([ReadySchema, ReceiverReadySchema]), 'Ready (internal: `Ready`; public: `ReceiverReady`)'),
        '503': json(z.union([NotReadySchema, DrainingSchema]), 'Temporal did not answer, or the process is draining'),
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
