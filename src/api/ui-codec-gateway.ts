import express, { type Express, type RequestHandler } from 'express';
import type { PayloadCodec } from '@temporalio/common';
import type { Logger } from '../telemetry/logging';
import { loggablePath } from '../security/redaction';
import type { Metrics } from './metrics';
import { errorHandler, HttpError } from './problem-details';
import { codecRoutes } from './resources/codec/routes';
import type { AuditLog } from '../audit/audit-log';

/** The operator the embedded Web UI decodes as (compose's codec gateway's operator has the same name). */
export const WEB_UI_OPERATOR = 'web-ui';

/**
 * The embedded Web UI's codec gateway (`npm start` with its dev server): docker-compose's codec-gateway, inside the
 * process. The Web UI sends no key of its own, and /codec on the internal listener decodes for an operator key only,
 * whatever the `Origin` (a header anyone can send). This app serves the two codec routes alone, as the operator
 * `web-ui` (counted in paylater_operator_api_requests_total under that name), and 404 to anything else; startListeners
 * binds it to 127.0.0.1 only (TEMPORAL_UI_CODEC_PORT), the Web UI's own boundary: whoever can open the UI on this
 * machine can decode through it, and no one else. CORS for the UI's origins (CODEC_CORS_ORIGINS).
 */
export function uiCodecGatewayApp(deps: {
  codec: PayloadCodec;
  corsOrigins: readonly string[];
  metrics: Pick<Metrics, 'operatorAuth'>;
  logger: Logger;
  /** The process's audit trail: each decode recorded as the operator `web-ui` (src/api/resources/codec/routes.ts). */
  audit?: AuditLog;
}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  const asWebUi: RequestHandler = (_req, res, next) => {
    deps.metrics.operatorAuth.inc({ operator: WEB_UI_OPERATOR, outcome: 'accepted' });
    (res.locals as { operator?: string }).operator = WEB_UI_OPERATOR;
    next();
  };
  app.use(
    codecRoutes({
      codec: deps.codec,
      authenticate: asWebUi,
      corsOrigins: deps.corsOrigins,
      audit: deps.audit,
      logger: deps.logger,
    }),
  );
  app.use((req, _res, next) => next(new HttpError(404, `No route for ${req.method} ${loggablePath(req.path)}`)));
  app.use(errorHandler(deps.logger));
  return app;
}
