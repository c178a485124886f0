/**
 * What never reaches a log line: credentials in request paths (a finance webhook's hash), and secrets passed by
 * mistake under a known name (pino's redact paths below, applied by src/logging.ts to every logger).
 */

/** A finance webhook's path, loosely (any letter case, repeated slashes): everything after the reference. */
const FINANCE_WEBHOOK_PATH = /^(\/+webhooks\/+finance-applications\/+[^/]*)\/.*$/i;
const WEBHOOK_PATH = /^\/+webhooks\//i;
/** A base64url HMAC-SHA256 (43 characters) or anything as long: in a webhook path, a possible credential. */
const LONG_TOKEN = /[A-Za-z0-9_-]{43,}/g;

/**
 * A request path for logs and error messages. A finance webhook's hash is a credential for its reference: whatever
 * follows the reference is replaced, on every path that looks like that route (also those the router would not
 * match: another letter case, a trailing slash or extra segments); in another webhook path, any hash-long token.
 * (The `?hash=` form travels in the query, which is never logged: callers pass `req.path`, never the URL.)
 */
export function loggablePath(path: string): string {
  if (FINANCE_WEBHOOK_PATH.test(path)) return path.replace(FINANCE_WEBHOOK_PATH, '$1/:hash');
  return WEBHOOK_PATH.test(path) ? path.replace(LONG_TOKEN, ':redacted') : path;
}

/**
 * Field paths pino replaces with "[redacted]" wherever a caller passes them: tokens, API keys, the webhook hash and
 * its secrets, and request headers that carry credentials (Authorization, cookies, API-key and security headers).
 * pino matches exact keys (no wildcard inside a key name), so each header is named.
 */
const SECRET_KEYS = [
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'clientSecret',
  'client_secret',
  'authorization',
  'apiKey',
  'key',
  'hash',
  'hashSecret',
  'previousHashSecret',
  'securityHeader',
  'secret',
  'password',
];
const SECRET_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'x-webhook-security',
  'x-bank-security',
  'x-security',
  'webhook-signature',
];

export const REDACT_PATHS = [
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((k) => `*.${k}`),
  ...SECRET_HEADERS.flatMap((h) => [`headers["${h}"]`, `req.headers["${h}"]`, `*.headers["${h}"]`]),
];
