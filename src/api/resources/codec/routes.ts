import type { RequestHandler, Router } from 'express';
import type { PayloadCodec } from '@temporalio/common';
import { tracedRouter } from '../../../telemetry/express-routes';
import { MemoryAuditLog, type AuditLog } from '../../../audit/audit-log';
import type { Logger } from '../../../telemetry/logging';
import { codecCors, codecOperation } from './handlers';

/**
 * The codec endpoint (Temporal's remote codec protocol) for the Web UI and the CLI
 * (`temporal --codec-endpoint <url>/codec --codec-auth 'Bearer <operator key>'`), on the internal listener:
 * - `POST /codec/decode`, `POST /codec/encode`: body `{ "payloads": [ { "metadata": { k: base64 }, "data": base64 } ] }`
 *   (proto3 JSON of Payloads), answered in the same shape; the `X-Namespace` header is accepted and ignored (one
 *   key ring for every namespace).
 * - CORS for the Web UI's origins (`corsOrigins`): the preflight is answered before authentication (browsers send
 *   no credentials with it); every other request must pass `authenticate` (authenticateOperator: an operator key;
 *   a merchant's key answers 403, since /codec decodes every merchant's payloads).
 * - A body that is not such JSON: 400/413/415 with a JSON body; a payload that cannot be decrypted (unknown key id,
 *   altered data): 400 naming the key id. Never 500 for anything a caller sends.
 *
 * Mount at the root of the internal listener's app, before its 404 and error handlers:
 * `app.use(codecRoutes({ codec, authenticate: codecAuthentication(config, deps), corsOrigins }))` (src/api/listeners.ts).
 */
export interface CodecRoutesDeps {
  /** The process's payload codec (createPayloadCodec(config.payloadEncryption.keys)), the data converter's own. */
  codec: PayloadCodec;
  /** Authentication of operators (authenticateOperator); runs for every /codec request but the CORS preflight. */
  authenticate: RequestHandler;
  /** Browser origins allowed to call (config.codec.corsOrigins): the Temporal Web UI. */
  corsOrigins: readonly string[];
  /** Largest accepted body; default 16 MiB (a history's payloads, base64). */
  bodyLimitBytes?: number;
  /**
   * The audit trail (AUDIT_LOG): every decode is recorded before its answer is sent, and refused (503) when it cannot
   * be (src/api/audit.ts). Absent: a trail of this router's own, in memory (tests).
   */
  audit?: AuditLog;
  logger?: Logger;
}

/** Largest accepted body by default: a history's payloads, base64. */
const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export function codecRoutes(deps: CodecRoutesDeps): Router {
  const router = tracedRouter();
  const limit = deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const audit = { audit: deps.audit ?? new MemoryAuditLog(), logger: deps.logger };
  router.use('/codec', codecCors(deps.corsOrigins), deps.authenticate);
  // Described in schemas.ts.
  router.post('/codec/decode', codecOperation('decode', { codec: deps.codec, limit, audit }));
  router.post('/codec/encode', codecOperation('encode', { codec: deps.codec, limit, audit }));
  return router;
}
