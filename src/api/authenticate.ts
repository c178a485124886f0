import type { RequestHandler, Response } from 'express';
import { identifyApiKey, type MerchantApiKey, type OperatorApiKey } from '../security/api-keys';
import { HttpError } from './problem-details';
import type { Metrics } from './metrics';
import type { MerchantScope } from '../client/merchant-scope';
import { FailedAuthentications } from './auth-failures';

export interface AuthenticateDeps {
  /** The configured keys (MERCHANT_API_KEYS); read per request, so a list swapped at runtime applies at once. */
  merchantApiKeys: readonly MerchantApiKey[];
  metrics: Pick<Metrics, 'merchantAuth' | 'authRefusals' | 'consoleSignInRefusals'>;
  /**
   * The process's one count of failed authentications (src/api/auth-failures.ts), shared by every route that checks
   * a key; absent: a count of this middleware's own, with the default limit.
   */
  authFailures?: FailedAuthentications;
}

export interface AuthenticateOperatorDeps {
  /** The operators' keys (OPERATOR_API_KEYS); read per request. Absent: none, so no operator route opens. */
  operatorApiKeys?: readonly OperatorApiKey[];
  /** The merchants' keys, only to count a merchant key tried here (outcome merchant_key); answered as any other. */
  merchantApiKeys: readonly MerchantApiKey[];
  metrics: Pick<Metrics, 'operatorAuth' | 'authRefusals' | 'consoleSignInRefusals'>;
  /** As AuthenticateDeps.authFailures: the same count as the merchant routes'. */
  authFailures?: FailedAuthentications;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The bearer key of a request, or undefined when it carries none in that form. */
function presentedKey(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/** The 401 of a request without a key, or with one that is no one's. */
function unauthorized(missing: boolean): HttpError {
  return new HttpError(
    401,
    missing ? 'Missing API key: send Authorization: Bearer <key>' : 'Invalid API key',
    undefined,
    undefined,
    { 'WWW-Authenticate': missing ? 'Bearer realm="paylater"' : 'Bearer realm="paylater", error="invalid_token"' },
  );
}

/** The authenticated merchant's name (set by `authenticate`): for logs and labels, never the key. */
export function merchantOf(res: Response): string | undefined {
  return (res.locals as { merchant?: string }).merchant;
}

/** The authenticated operator's name (set by `authenticateOperator`): for logs and labels, never the key. */
export function operatorOf(res: Response): string | undefined {
  return (res.locals as { operator?: string }).operator;
}

/**
 * The authenticated merchant as a scope: its own applications and consents. Facade routes run behind
 * `authenticate`: no merchant here is a wiring mistake.
 */
export function scopeOf(res: Response): MerchantScope {
  const merchantId = merchantOf(res);
  if (merchantId === undefined) throw new Error('facade route reached without an authenticated merchant');
  return { merchantId };
}

/**
 * Express middleware: the request must carry `Authorization: Bearer <key>` with one of the merchant API keys.
 * Otherwise 401 `{ error: "unauthorized", message }` with `WWW-Authenticate: Bearer`, and the route never runs
 * (nothing is started or read). The key is compared with every configured key in constant time
 * (src/security/api-keys.ts); only the matching key's name is kept (`res.locals.merchant`, see merchantOf) and
 * counted (`paylater_merchant_api_requests_total{merchant, outcome}`); the key itself is never logged. A wrong key
 * counts against the client address (`failures`, src/api/auth-failures.ts): past the limit, 429 before any key is
 * compared.
 *
 * Mounted in front of the merchant facade. Operator routes mount `authenticateOperator` instead.
 */
export function authenticate(
  deps: AuthenticateDeps,
  failures: FailedAuthentications = deps.authFailures ?? new FailedAuthentications(deps),
): RequestHandler {
  const gate = failures.gate('merchant_api');
  return (req, res, next) =>
    gate(req, res, (err?: unknown) => {
      if (err !== undefined) return next(err);
      const presented = presentedKey(req.headers.authorization);
      const merchant = presented === undefined ? undefined : identifyApiKey(deps.merchantApiKeys, presented);
      if (merchant === undefined) {
        const missing = presented === undefined;
        deps.metrics.merchantAuth.inc({ merchant: 'none', outcome: missing ? 'missing' : 'wrong' });
        if (missing) return next(unauthorized(true));
        return failures.fail(req, res, next, () => next(unauthorized(false)));
      }
      deps.metrics.merchantAuth.inc({ merchant, outcome: 'accepted' });
      (res.locals as { merchant?: string }).merchant = merchant;
      next();
    });
}

/**
 * Express middleware in front of every operator route (today /codec, which decodes every merchant's payloads):
 * the request must carry `Authorization: Bearer <key>` with one of the operator API keys. Any other key, a
 * merchant's included, answers exactly as an unknown one (401, and counted against the client address as
 * `authenticate` counts it), so /codec never tells that a key is a merchant's; a missing key 401. Counted in
 * `paylater_operator_api_requests_total{operator, outcome}` (outcome accepted, missing, wrong, merchant_key), by the
 * key's name, never the key; the operator's name is kept in `res.locals.operator` (see operatorOf). Put CORS in
 * front of it where browsers call, so a preflight (which carries no Authorization) is answered:
 * `router.use('/codec', cors, authenticateOperator(deps))`.
 */
export function authenticateOperator(
  deps: AuthenticateOperatorDeps,
  failures: FailedAuthentications = deps.authFailures ?? new FailedAuthentications(deps),
): RequestHandler {
  const gate = failures.gate('operator_api');
  return (req, res, next) =>
    gate(req, res, (err?: unknown) => {
      if (err !== undefined) return next(err);
      const presented = presentedKey(req.headers.authorization);
      if (presented === undefined) {
        deps.metrics.operatorAuth.inc({ operator: 'none', outcome: 'missing' });
        return next(unauthorized(true));
      }
      const operator = identifyApiKey(deps.operatorApiKeys ?? [], presented);
      if (operator !== undefined) {
        deps.metrics.operatorAuth.inc({ operator, outcome: 'accepted' });
        (res.locals as { operator?: string }).operator = operator;
        return next();
      }
      // Counted apart for operators; answered as any other key that is not an operator's.
      const merchantKey = identifyApiKey(deps.merchantApiKeys, presented) !== undefined;
      deps.metrics.operatorAuth.inc({ operator: 'none', outcome: merchantKey ? 'merchant_key' : 'wrong' });
      failures.fail(req, res, next, () => next(unauthorized(false)));
    });
}
