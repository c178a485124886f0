/**
 * The probes and metrics (routes.ts): their answers and OpenAPI operations. Imported by the route and
 * by src/api/openapi/document.ts.
 */
import { z } from 'zod';
import { errors, json, open, OPERATOR_API_KEY, operatorKeyRequired, Tag, type ApiPaths } from '../../openapi/describe';

export const LivenessSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Liveness' });
/** The internal listener's readiness with an operator key: Temporal answered. */
export const ReadySchema = z.object({ status: z.literal('ready'), temporal: z.literal('ok') }).meta({ id: 'Ready' });
/** The internal listener's readiness with an operator key: Temporal did not answer, and why (its error text). */
export const NotReadySchema = z
  .object({ status: z.literal('not_ready'), temporal: z.literal('unreachable'), message: z.string() })
  .meta({ id: 'NotReady' });
/** The internal listener's readiness without a key (a probe): the status alone, nothing of Temporal's error. */
export const NotReadyStatusSchema = z.object({ status: z.literal('not_ready') }).meta({ id: 'NotReadyStatus' });
/** 503 from SIGTERM on (both listeners): the process is shutting down; a load balancer sends it nothing new. */
export const DrainingSchema = z.object({ status: z.literal('draining'), message: z.string() }).meta({ id: 'Draining' });
/**
 * Readiness as a probe reads it: the public listener's (this process takes webhooks; it does not call Temporal for the
 * internet), and the internal listener's without an operator key (Temporal answered).
 */
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
        'balancer stops sending new requests before the listeners close. The public listener checks nothing else. ' +
        'Without a key (a probe) the internal listener answers the status alone; with an operator key ' +
        "(OPERATOR_API_KEYS) it adds Temporal's state and, when Temporal did not answer, its error. Any other key: " +
        '401, or 403 for a merchant key.',
      security: [{}, { [OPERATOR_API_KEY]: [] }],
      responses: {
        '200': json(
          z.union([ReadySchema, ReceiverReadySchema]),
          'Ready (with an operator key: `Ready`; otherwise `ReceiverReady`)',
        ),
        '503': json(
          z.union([NotReadySchema, NotReadyStatusSchema, DrainingSchema]),
          'Temporal did not answer (with an operator key: `NotReady`, its error; otherwise `NotReadyStatus`), or the ' +
            'process is draining',
        ),
        ...errors(401, [403, 'A merchant key: an operator key is required for the details']),
      },
    },
  },
  '/metrics': {
    get: {
      'x-listener': 'internal',
      operationId: 'metrics',
      tags: [Tag.Operations],
      summary: 'Prometheus metrics of both listeners (text exposition format), for operators',
      description:
        "The series name every merchant and its request volume: an operator key (OPERATOR_API_KEYS) is required, a merchant's key answers 403.",
      security: operatorKeyRequired,
      responses: {
        '200': { description: 'Metrics', content: { 'text/plain': { schema: z.string() } } },
        ...errors(401, [403, "A merchant's key: an operator key is required"]),
      },
    },
  },
};
