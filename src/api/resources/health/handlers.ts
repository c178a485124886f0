import type { RequestHandler, Response } from 'express';
import type { Logger } from '../../../telemetry/logging';
import type { Metrics } from '../../metrics';
import type { DrainSignals } from '../../drain';
import type { AuthenticateOperatorDeps } from '../../authenticate';
import { hardBound } from '../../deadlines';
import { sendAs } from '../../openapi/describe';
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

/** `GET /healthz`: the process answers. */
export function liveness(): RequestHandler {
  return (_req, res) => {
    sendAs(res, 200, LivenessSchema, { status: 'ok' });
  };
}

/** The public listener's `GET /readyz`: 200 unless the process is draining. */
export function receiverReadiness(deps: { drain?: DrainSignals }): RequestHandler {
  return (_req, res) => {
    if (answeredDraining(res, deps.drain)) return;
    sendAs(res, 200, ReceiverReadySchema, { status: 'ready' });
  };
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

/** The internal listener's `GET /readyz`: Temporal answers within READINESS_BOUND_MS; details to an operator only. */
export function readiness(deps: OperatorRouteDeps): RequestHandler {
  return async (req, res) => {
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
  };
}

/** `GET /metrics`: both listeners' metrics (behind an operator key). */
export function metrics(deps: OperatorRouteDeps): RequestHandler {
  return async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  };
}
