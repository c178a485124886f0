import type { RequestHandler, Response } from 'express';
import { identifyMerchant, type MerchantApiKey } from '../security/api-keys';
import { HttpError } from './errors';
import type { Metrics } from './metrics';
import type { MerchantScope } from '../client/merchant-scope';

export interface AuthenticateDeps {
  /** The configured keys (MERCHANT_API_KEYS); read per request, so a list swapped at runtime applies at once. */
  merchantApiKeys: readonly MerchantApiKey[];
  metrics: Pick<Metrics, 'merchantAuth'>;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The authenticated merchant's name (set by `authenticate`): for logs and labels, never the key. */
export function merchantOf(res: Response): string | undefined {
  return (res.locals as { merchant?: string }).merchant;
}

/**
 * The authenticated merchant as a scope: its own applications and consents, and the pre-tenancy ones when it is
 * the legacy merchant. Facade routes run behind `authenticate`: no merchant here is a wiring mistake.
 */
export function scopeOf(res: Response, merchants: { legacyMerchantId: string }): MerchantScope {
  const merchantId = merchantOf(res);
  if (merchantId === undefined) throw new Error('facade route reached without an authenticated merchant');
  return { merchantId, ownsLegacy: merchantId === merchants.legacyMerchantId };
}

/**
 * Express middleware: the request must carry `Authorization: Bearer <key>` with one of the merchant API keys.
 * Otherwise 401 `{ error: "unauthorized", message }` with `WWW-Authenticate: Bearer`, and the route never runs
 * (nothing is started or read). The key is compared with every configured key in constant time
 * (src/security/api-keys.ts); only the matching key's name is kept (`res.locals.merchant`, see merchantOf) and
 * counted (`merchant_api_requests_total{merchant, outcome}`); the key itself is never logged.
 *
 * Mounted in front of the merchant facade; put it in front of any other router that needs a merchant's or
 * operator's key (the codec endpoint: `router.use('/codec', cors, authenticate(deps), codecRouter)`, CORS first
 * so a browser's preflight, which carries no Authorization, is answered).
 */
export function authenticate(deps: AuthenticateDeps): RequestHandler {
  return (req, res, next) => {
    const header = req.headers.authorization;
    const presented = header === undefined ? undefined : BEARER.exec(header)?.[1];
    const merchant = presented === undefined ? undefined : identifyMerchant(deps.merchantApiKeys, presented);
    if (merchant === undefined) {
      const missing = presented === undefined;
      deps.metrics.merchantAuth.inc({ merchant: 'none', outcome: missing ? 'missing' : 'wrong' });
      next(
        new HttpError(
          401,
          missing ? 'Missing API key: send Authorization: Bearer <key>' : 'Invalid API key',
          undefined,
          undefined,
          {
            'WWW-Authenticate': missing ? 'Bearer realm="paylater"' : 'Bearer realm="paylater", error="invalid_token"',
          },
        ),
      );
      return;
    }
    deps.metrics.merchantAuth.inc({ merchant, outcome: 'accepted' });
    (res.locals as { merchant?: string }).merchant = merchant;
    next();
  };
}
