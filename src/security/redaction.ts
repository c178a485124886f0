/**
 * What never reaches a log line or an exported span: credentials in request paths (a finance webhook's hash), query
 * strings (`?hash=`, a merchant's token), the path of a merchant's callback URL, and secrets passed by mistake under a
 * known name (pino's redact paths below, applied by src/telemetry/logging.ts to every logger).
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
 * (The `?hash=` form travels in the query, which is never logged: callers pass `req.path` or `loggableTarget(req.url)`.)
 */
export function loggablePath(path: string): string {
  if (FINANCE_WEBHOOK_PATH.test(path)) return path.replace(FINANCE_WEBHOOK_PATH, '$1/:hash');
  return WEBHOOK_PATH.test(path) ? path.replace(LONG_TOKEN, ':redacted') : path;
}

const ABSOLUTE_URL = /^[a-z][a-z0-9+.-]*:\/\//i;
const UNPARSABLE_URL = ':unparsable-url';

/**
 * A URL, or a path as a request line carries it, for logs and spans: the origin (no credentials) and the loggable
 * path; never the query or the fragment. A path is cut at `?` rather than parsed as a URL, which would read
 * `//webhooks/…` as a host.
 */
export function loggableUrl(url: string): string {
  if (!ABSOLUTE_URL.test(url)) return loggablePath(url.split(/[?#]/, 1)[0] || '/');
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${loggablePath(parsed.pathname)}`;
  } catch {
    return UNPARSABLE_URL;
  }
}

/**
 * A request line's target for logs and spans: the loggable path only, from the origin form (`/path?query`) or the
 * absolute form (`http://host/path?query`, which Node's server and Express's router accept as well).
 */
export function loggableTarget(target: string): string {
  if (!ABSOLUTE_URL.test(target)) return loggableUrl(target);
  try {
    return loggablePath(new URL(target).pathname);
  } catch {
    return UNPARSABLE_URL;
  }
}

/** What stands for the path of a merchant's callback URL: the merchant chose it, and it may carry its own secret. */
export const CALLBACK_PATH_PLACEHOLDER = '/:callback-path';

/** A merchant's callback URL for logs and spans: its origin, and a fixed path. */
export function loggableCallbackUrl(url: string): string {
  try {
    return `${new URL(url).origin}${CALLBACK_PATH_PLACEHOLDER}`;
  } catch {
    return UNPARSABLE_URL;
  }
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
