import type { RequestHandler, Router } from 'express';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { PayloadEncryptionError } from '../../../security/payload-codec';
import { HttpError } from '../../problem-details';
import { hasJsonContentType, readJsonBody } from '../../json-body';

import { tracedRouter } from '../../../telemetry/express-routes';
import { CodecAnswerSchema, CodecBodySchema } from './schemas';
import { MemoryAuditLog, type AuditLog } from '../../../audit/audit-log';
import { KEY_ID_METADATA_KEY } from '../../../security/payload-codec';
import type { Logger } from '../../../telemetry/logging';
import { operatorActor, recordAction } from '../../audit';

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

export const CODEC_ALLOWED_HEADERS = 'Authorization, Content-Type, X-Namespace';
const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

type JsonPayload = NonNullable<z.infer<typeof CodecBodySchema>['payloads']>[number];

const fromJson = ({ metadata, data }: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(data ?? '', 'base64'),
});

const base64Of = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

const toJson = ({ metadata, data }: Payload): { metadata: Record<string, string>; data: string } => ({
  metadata: Object.fromEntries(Object.entries(metadata ?? {}).map(([k, v]) => [k, base64Of(v)])),
  data: base64Of(data ?? new Uint8Array()),
});

/** The X-Namespace header as recorded: a namespace name, or what stands for a missing or malformed one. */
function namespaceOf(header: string | string[] | undefined): string {
  if (header === undefined) return '(not sent)';
  return typeof header === 'string' && /^[A-Za-z0-9._-]{1,255}$/.test(header) ? header : '(malformed)';
}

/** The payloads' encryption key ids (in clear in their metadata, never a key), each once, at most 16. */
function keyIdsOf(payloads: JsonPayload[]): string[] {
  const ids = new Set<string>();
  for (const p of payloads) {
    const id = p.metadata?.[KEY_ID_METADATA_KEY];
    if (id !== undefined) ids.add(Buffer.from(id, 'base64').toString('utf8').slice(0, 64));
    if (ids.size >= 16) break;
  }
  return [...ids];
}

export function codecRoutes(deps: CodecRoutesDeps): Router {
  const router = tracedRouter();
  const allowed = new Set(deps.corsOrigins);
  const limit = deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const audit = { audit: deps.audit ?? new MemoryAuditLog(), logger: deps.logger };

  const cors: RequestHandler = (req, res, next) => {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      res.vary('Origin');
      if (!allowed.has(origin)) {
        req.resume();
        return next(new HttpError(403, `Origin ${origin} may not call the codec endpoint (CODEC_CORS_ORIGINS)`));
      }
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    }
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', CODEC_ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      res.status(204).end();
      return;
    }
    next();
  };
  router.use('/codec', cors, deps.authenticate);

  const handle =
    (operation: 'encode' | 'decode'): RequestHandler =>
    async (req, res) => {
      if (!hasJsonContentType(req, false)) {
        req.resume();
        throw new HttpError(415, 'Content-Type must be application/json');
      }
      const payloads = CodecBodySchema.parse(await readJsonBody(req, limit)).payloads ?? [];
      let result: Payload[];
      try {
        result = await deps.codec[operation](payloads.map(fromJson));
      } catch (err) {
        if (err instanceof PayloadEncryptionError) throw new HttpError(400, err.message);
        throw err;
      }
      // Decrypted data leaves only once its reading is recorded. What the codec protocol tells: the operator, the
      // namespace (X-Namespace) and the payloads; not which workflow they are from (docs/security.md#audit-trail).
      if (operation === 'decode')
        await recordAction(audit, {
          actor: operatorActor(res),
          action: 'codec.decode',
          target: { kind: 'namespace', id: namespaceOf(req.headers['x-namespace']) },
          details: {
            payloads: payloads.length,
            keyIds: keyIdsOf(payloads),
            origin: typeof req.headers.origin === 'string' ? req.headers.origin : null,
          },
        });
      res.json({ payloads: result.map(toJson) } satisfies z.infer<typeof CodecAnswerSchema>);
    };
  // Described in schemas.ts.
  router.post('/codec/decode', handle('decode'));
  router.post('/codec/encode', handle('encode'));
  return router;
}
