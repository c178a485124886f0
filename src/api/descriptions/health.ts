/**
 * The probes and metrics (src/api/routes/health.ts): their answers and OpenAPI operations. Imported by the route and
 * by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { json, open, Tag, type ApiPaths } from './describe';

export const LivenessSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Liveness' });
export const ReadySchema = z.object({ status: z.literal('ready'), temporal: z.literal('ok') }).meta({ id: 'Ready' });
export const NotReadySchema = z
  .object({ status: z.literal('not_ready'), temporal: z.literal('unreachable'), message: z.string() })
  .meta({ id: 'NotReady' });
/** 503 from SIGTERM on (both listeners): the process is shutting down; a load balancer sends it nothing new. */
export const DrainingSchema = z.object({ status: z.literal('draining'), message: z.string() }).meta({ id: 'Draining' });
/** The public listener's readiness: this process takes webhooks (it does not call Temporal for the internet). */
export const ReceiverReadySchema = z.object({ status: z.literal('ready') }).meta({ id: 'ReceiverReady' });

/** The routes' OpenAPI operations (gathered by src/api/openapi/document.ts). */
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
