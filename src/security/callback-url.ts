import { classifyAddress } from './address-class';

/**
 * Where merchant callbacks may go: the one decision, used by the config (TRANSACTIONS_CALLBACK_URL at start-up),
 * the merchant facade (POST /applications `callbackUrl`), the workflow's first step (through the
 * `checkCallbackUrl` local activity: the list lives in the worker's environment) and `notifyMerchant` itself.
 *
 * Rules: http or https only; no credentials (userinfo) in the URL; the URL's origin (scheme, host, port, as the
 * WHATWG URL parser normalises them: lowercase host, default port dropped, IPv4 and IPv6 in canonical form) must
 * equal one of the listed origins exactly. No wildcard, no subdomain or path matching.
 *
 * Loopback: only the embedded stack's default (CALLBACK_ALLOWED_ORIGINS unset, bank sandbox) allows loopback
 * origins (localhost, 127.0.0.0/8, [::1]) on any port, for a developer's local merchant. Outside it nothing is
 * allowed unless listed; an operator who lists a loopback or private origin explicitly gets exactly that one.
 */

export const CALLBACK_ALLOWED_ORIGINS = 'CALLBACK_ALLOWED_ORIGINS';

export interface CallbackAllowList {
  /** Normalised origins (`URL#origin`), e.g. `https://shop.example`, `https://hooks.shop.example:8443`. */
  origins: readonly string[];
  /** Any loopback origin, any port: the embedded stack's default only. */
  loopback: boolean;
  /**
   * Where this list is configured, as refusals name it; absent: CALLBACK_ALLOWED_ORIGINS. A merchant's own list is
   * `{ variable: 'MERCHANTS_FILE', name: 'MERCHANTS_FILE callbackAllowedOrigins of merchant "shop-a"' }`.
   */
  source?: { variable: string; name: string };
}

/** Allows nothing: what an absent allow-list means. */
export const NO_CALLBACKS: CallbackAllowList = { origins: [], loopback: false };

export type CallbackUrlVerdict =
  | { allowed: true; origin: string }
  /**
   * `origin` when the URL parsed (safe to show: no path, query or credentials); `reason` names the rule and the list
   * that applied; `variable` is where that list is configured (absent in verdicts recorded before it existed).
   */
  | { allowed: false; origin?: string; reason: string; variable?: string };

/**
 * One entry of CALLBACK_ALLOWED_ORIGINS → its normalised origin, or the problem. A trailing slash is accepted
 * (`https://shop.example/`); a path, query, fragment or credentials are not: an origin is scheme, host and port.
 */
export function parseAllowedOrigin(entry: string): { origin: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return { problem: `"${entry}" is not an origin like https://shop.example` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { problem: `"${entry}": only http and https origins are allowed` };
  if (url.username !== '' || url.password !== '') return { problem: `"${url.origin}": no credentials in an origin` };
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || /[?#]/.test(entry))
    return { problem: `"${entry}": an origin has no path, query or fragment (scheme://host[:port])` };
  return { origin: url.origin };
}

/** CALLBACK_ALLOWED_ORIGINS (comma-separated, blanks ignored) → normalised origins, or every problem. */
export function parseAllowedOrigins(value: string): { origins: string[]; problems: string[] } {
  const origins: string[] = [];
  const problems: string[] = [];
  for (const entry of value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const parsed = parseAllowedOrigin(entry);
    if ('problem' in parsed) problems.push(parsed.problem);
    else if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
  }
  return { origins, problems };
}

/** The verdict on one callback URL. Pure and synchronous: no DNS (see `permitsResolvedAddress` for that). */
export function checkCallbackUrl(url: string, allowList: CallbackAllowList): CallbackUrlVerdict {
  const { variable, name } = allowListSource(allowList);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { allowed: false, reason: 'callback URL is not an absolute URL', variable };
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return { allowed: false, reason: `callback URL scheme ${parsed.protocol} is not http or https`, variable };
  const { origin } = parsed;
  if (parsed.username !== '' || parsed.password !== '')
    return { allowed: false, origin, reason: 'callback URL must not carry credentials (user:password@)', variable };
  if (allowList.origins.includes(origin)) return { allowed: true, origin };
  if (allowList.loopback && isLoopbackHost(parsed.hostname)) return { allowed: true, origin };
  return {
    allowed: false,
    origin,
    reason:
      allowList.origins.length === 0 && !allowList.loopback
        ? `callback origin ${origin} is not allowed: ${name} is empty`
        : `callback origin ${origin} is not in ${name}`,
    variable,
  };
}

/** The list's variable and its name in refusals: CALLBACK_ALLOWED_ORIGINS unless the list says otherwise. */
export function allowListSource(allowList: CallbackAllowList): { variable: string; name: string } {
  return allowList.source ?? { variable: CALLBACK_ALLOWED_ORIGINS, name: CALLBACK_ALLOWED_ORIGINS };
}

/** `localhost`, `*.localhost`, or an address of this host's loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.1; a URL's hostname: IPv6 in brackets). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return classifyAddress(host) === 'loopback';
}

/**
 * True for an address that is not globally routable unicast, or that embeds one that is not (NAT64, 6to4, ISATAP;
 * Teredo whole): the classification is src/security/address-class.ts.
 */
export function isNonPublicAddress(address: string): boolean {
  return classifyAddress(address) !== 'public';
}

/**
 * DNS rebinding guard, applied at connect time to the addresses a callback's host name resolved to (the name
 * passed the allow-list; what it resolves to can change between the check and the request). A public address
 * passes; a loopback one when the list allows loopback (embedded) or the name itself is `localhost`; any other
 * non-public address is refused. IP literals are never looked up, so a listed `http://10.0.0.5:8080` still works.
 */
export function permitsResolvedAddress(hostname: string, address: string, allowList: CallbackAllowList): boolean {
  const kind = classifyAddress(address);
  if (kind === 'public') return true;
  return kind === 'loopback' && (allowList.loopback || isLoopbackHost(hostname));
}
