import type { RequestHandler } from 'express';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import { PayloadEncryptionError } from '../../../security/payload-codec';
import { HttpError } from '../../problem-details';
import { hasJsonContentType, readJsonBody } from '../../json-body';

import { CodecAnswerSchema, CodecBodySchema } from './schemas';
import { KEY_ID_METADATA_KEY } from '../../../security/payload-codec';
import { operatorActor, recordAction, type AuditDeps } from '../../audit';

export const CODEC_ALLOWED_HEADERS = 'Authorization, Content-Type, X-Namespace';

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

/** CORS for the Web UI's origins (CODEC_CORS_ORIGINS): another origin is refused; a preflight is answered here. */
export function codecCors(corsOrigins: readonly string[]): RequestHandler {
  const allowed = new Set(corsOrigins);
  return (req, res, next) => {
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
}

/** `POST /codec/encode` or `/codec/decode`: the payloads through the codec; a decode is audited before its answer. */
export function codecOperation(
  operation: 'encode' | 'decode',
  deps: { codec: PayloadCodec; limit: number; audit: AuditDeps },
): RequestHandler {
  const { limit, audit } = deps;
  return async (req, res) => {
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
}
