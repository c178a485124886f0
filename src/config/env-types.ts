import { isIP } from 'node:net';
import { z } from 'zod';
import { parsePayloadEncryptionKeys, type PayloadEncryptionKey } from '../security/payload-codec';
import { parseAllowedOrigins } from '../security/callback-url';
import { signingSecretProblem } from '../security/callback-signature';
import { masterSecretProblem } from '../security/merchant-signing-secret';
import { formatDuration, parseDurationMs, type Bounds } from '../shared/application-settings';
import { parseAuditLogSetting } from '../audit/setting';
import { parseMerchantKeyStoreSetting } from '../keys/setting';

/**
 * The kinds of value the environment holds (src/config/schema.ts gives each variable one). Blank counts as unset, and
 * no message repeats the value of a secret or a URL with a password.
 */
export const emptyToUndefined = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? undefined : v);
export const optionalString = z.preprocess(emptyToUndefined, z.string().optional());
export const httpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' })
  .transform((u) => u.replace(/\/+$/, ''));
export const optionalUrl = z.preprocess(emptyToUndefined, httpUrl.optional());
/** A comma-separated list (blank entries ignored); undefined when unset. */
export const optionalList = z.preprocess(emptyToUndefined, z.string().optional()).transform((v) =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
);
/** CALLBACK_ALLOWED_ORIGINS → normalised origins (src/security/callback-url.ts). */
export const allowedOrigins = z.preprocess(emptyToUndefined, z.string().optional()).transform((value, ctx) => {
  if (value === undefined) return undefined;
  const { origins, problems } = parseAllowedOrigins(value);
  for (const message of problems) ctx.addIssue({ code: 'custom', message });
  return origins;
});
/** CALLBACK_SIGNING_SECRETS: the messages name a secret by position, never by value. */
export const signingSecrets = optionalList.superRefine((secrets, ctx) => {
  if (secrets === undefined) return;
  if (secrets.length === 0) ctx.addIssue({ code: 'custom', message: 'must list at least one whsec_ secret' });
  secrets.forEach((secret, i) => {
    const problem = signingSecretProblem(secret);
    if (problem) ctx.addIssue({ code: 'custom', message: `secret ${i + 1} of ${secrets.length}: ${problem}` });
  });
});
/** CALLBACK_SIGNING_MASTER_SECRETS: the messages name a master by position, never by value. */
export const signingMasters = optionalList.superRefine((masters, ctx) => {
  if (masters === undefined) return;
  if (masters.length === 0) ctx.addIssue({ code: 'custom', message: 'must list at least one master' });
  masters.forEach((master, i) => {
    const problem = masterSecretProblem(master);
    if (problem) ctx.addIssue({ code: 'custom', message: `master ${i + 1} of ${masters.length}: ${problem}` });
  });
});

/** AUDIT_LOG → where the audit trail is kept (src/audit/setting.ts); the message never repeats a postgres URL. */
export const auditLog = z.preprocess(emptyToUndefined, z.string().optional()).transform((value, ctx) => {
  if (value === undefined) return undefined;
  const parsed = parseAuditLogSetting(value);
  if ('problem' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  }
  return parsed.setting;
});

/** MERCHANT_KEY_STORE → where the merchants' wrapped payload keys are (src/keys/setting.ts); never repeats a URL. */
export const merchantKeyStore = z.preprocess(emptyToUndefined, z.string().optional()).transform((value, ctx) => {
  if (value === undefined) return undefined;
  const parsed = parseMerchantKeyStoreSetting(value);
  if ('problem' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  }
  return parsed.setting;
});

/** A listener's address: an IP address (node:net's isIP), unset for the process's default. */
export const listenHost = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .refine((v) => isIP(v) !== 0, 'must be an IP address: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)')
    .optional(),
);

export const port = (fallback: number) =>
  z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ error: 'must be a port number' })
      .int('must be an integer')
      .min(0, 'must be 0-65535')
      .max(65535, 'must be 0-65535')
      .default(fallback),
  );
/** A whole number from the environment; `min` is what the SDK or the server would refuse below. */
export const wholeNumber = (min: number) =>
  z.coerce
    .number({ error: 'must be a whole number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(1_000_000, 'must be at most 1000000');
export const count = (min: number, fallback: number) =>
  z.preprocess(emptyToUndefined, wholeNumber(min).default(fallback));
export const optionalCount = (min: number) => z.preprocess(emptyToUndefined, wholeNumber(min).optional());
/** A share between 0 and 1, exclusive of 0. */
export const fraction = (fallback: number) =>
  z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ error: 'must be a number between 0 and 1' })
      .gt(0, 'must be above 0')
      .max(1, 'must be at most 1')
      .default(fallback),
  );
const BYTE_UNITS: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 };
/** A memory size as Kubernetes writes one (`768Mi`, `2Gi`, `1G`, or bytes), in bytes; at least 64 MiB. */
export const byteSize = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .transform((text, ctx) => {
      const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(text.trim());
      const bytes = m ? Math.floor(Number(m[1]) * BYTE_UNITS[m[2] ?? '']!) : NaN;
      if (!Number.isFinite(bytes) || bytes < 64 * 2 ** 20) {
        ctx.addIssue({ code: 'custom', message: 'must be a size of at least 64Mi, as 768Mi, 2Gi or bytes' });
        return z.NEVER;
      }
      return bytes;
    })
    .optional(),
);
/** A duration (`30s`, `5m`, `1h`, `30d`, or whole milliseconds) within `bounds`; undefined when unset. */
export const duration = (bounds: Bounds) =>
  z.preprocess(
    emptyToUndefined,
    z
      .string()
      .optional()
      .transform((value, ctx): number | undefined => {
        if (value === undefined) return undefined;
        const ms = parseDurationMs(value);
        if (ms === undefined) {
          ctx.addIssue({ code: 'custom', message: 'must be a duration such as 500ms, 30s, 5m, 1h or 30d' });
          return z.NEVER;
        }
        if (ms < bounds.min || ms > bounds.max) {
          ctx.addIssue({
            code: 'custom',
            message: `must be between ${formatDuration(bounds.min)} and ${formatDuration(bounds.max)}`,
          });
          return z.NEVER;
        }
        return ms;
      }),
  );
/** `keyId:<base64 of 32 bytes>,…` (src/security/payload-codec.ts); the message never echoes a key. */
export const payloadKeys = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .optional()
    .transform((value, ctx): PayloadEncryptionKey[] | undefined => {
      if (value === undefined) return undefined;
      try {
        return parsePayloadEncryptionKeys(value);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
);
/** Comma-separated origins (scheme://host[:port], nothing after it), as a browser sends them in `Origin`. */
export const origins = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .optional()
    .transform((value, ctx): string[] | undefined => {
      if (value === undefined) return undefined;
      const list = value
        .split(',')
        .map((o) => o.trim())
        .filter((o) => o !== '');
      for (const origin of list) {
        let parsed: URL | undefined;
        try {
          parsed = new URL(origin);
        } catch {
          parsed = undefined;
        }
        if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
          ctx.addIssue({ code: 'custom', message: `"${origin}" is not an origin: http(s)://host[:port], no path` });
          return z.NEVER;
        }
      }
      return list;
    }),
);
