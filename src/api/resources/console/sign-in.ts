import type { RequestHandler } from 'express';
import { identifyApiKey } from '../../../security/api-keys';
import { signInPage } from './views';
import type { ConsoleSession } from './sessions';
import {
  CONSOLE_CONTENT_SECURITY_POLICY,
  ConsoleError,
  isFragment,
  page,
  requireCsrf,
  sameOrigin,
  sessionCookie,
  sessionOf,
  type ConsoleContext,
} from './context';

/** Every console answer's headers; a POST from another origin is refused. */
export function consoleHeaders(): RequestHandler {
  return (req, res, next) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // same-origin, not no-referrer: under no-referrer a browser's form POST says `Origin: null`, which the check below refuses.
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Cache-Control', 'no-store');
    // SameSite=Strict keeps the cookie off cross-site requests; a browser's Origin says the rest.
    if (req.method === 'POST' && !sameOrigin(req)) return next(new ConsoleError(403, 'Refused: not from this console'));
    next();
  };
}

/** The sign-in form, or the applications when signed in already. */
export function signInForm(ctx: ConsoleContext): RequestHandler {
  return (req, res) => {
    if (sessionOf(ctx, req)) return void res.redirect(303, '/console/applications');
    page(res, 200, 'Sign in', signInPage());
  };
}

/** Signs in with a merchant API key (a POST form, never a URL); a wrong key counts against the address. */
export function signIn(ctx: ConsoleContext): RequestHandler {
  const { deps, sessions, failures } = ctx;
  return (req, res, next) => {
    const key = (req.body as Record<string, unknown> | undefined)?.key;
    const merchantId = typeof key === 'string' && key !== '' ? identifyApiKey(deps.merchantApiKeys, key) : undefined;
    if (merchantId === undefined) {
      const missing = !(typeof key === 'string' && key);
      deps.metrics.merchantAuth.inc({ merchant: 'none', outcome: missing ? 'missing' : 'wrong' });
      const answer = () => page(res, 401, 'Sign in', signInPage('That key is not a merchant API key.'));
      // A wrong key counts against the address (no key at all is not a guess).
      if (missing) return answer();
      return failures.fail(req, res, next, answer);
    }
    deps.metrics.merchantAuth.inc({ merchant: merchantId, outcome: 'accepted' });
    const session = sessions.create(merchantId);
    res.setHeader('Set-Cookie', sessionCookie(req, session.id));
    deps.logger.info({ merchant: merchantId }, 'console sign-in');
    res.redirect(303, '/console/applications');
  };
}

export function signOut(ctx: ConsoleContext): RequestHandler {
  const { sessions } = ctx;
  return (req, res) => {
    const session = sessionOf(ctx, req);
    if (session) {
      requireCsrf(req, session);
      sessions.delete(session.id);
    }
    res.setHeader('Set-Cookie', sessionCookie(req, '', 0));
    res.redirect(303, '/console');
  };
}

/**
 * Every other console route needs a session: pages send the browser to sign in, fragments answer 401. Signed in,
 * the request spends the merchant's request budget, the API's own (one count for both).
 */
export function requireSession(ctx: ConsoleContext): RequestHandler {
  const { budgets } = ctx;
  return (req, res, next) => {
    const session = sessionOf(ctx, req);
    if (session) {
      Object.assign(res.locals as { console?: ConsoleSession; merchant?: string }, {
        console: session,
        merchant: session.merchantId,
      });
      return budgets.requests(req, res, next);
    }
    if (req.method === 'GET' && !isFragment(req)) return void res.redirect(303, '/console/sign-in');
    next(new ConsoleError(401, 'Sign in first'));
  };
}
