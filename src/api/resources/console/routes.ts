import express, { type Router } from 'express';
import { FinanceApplicationWaits } from '../../../client/finance-applications';
import { merchantBudgets, type MerchantBudgets } from '../../budgets';
import { FailedAuthentications } from '../../auth-failures';
import { CONSOLE_FAVICON, CONSOLE_SCRIPT, CONSOLE_STYLES } from './assets';
import { ConsoleSessions, DEFAULT_SESSION_LIMITS } from './sessions';
import { ConsoleError, type ConsoleContext, type ConsoleRouteDeps } from './context';
import { consoleHeaders, requireSession, signIn, signInForm, signOut } from './sign-in';
import { consoleErrors } from './errors';
import {
  applicationTimeline,
  listApplications,
  listUndeliveredCallbacks,
  refreshProgress,
  resendApplicationCallback,
  resendUndeliveredCallbacks,
  rotateCallbackSecret,
  showApplication,
  showCallbackSecret,
  showConsents,
} from './handlers';

export { CONSOLE_COOKIE, CONSOLE_CONTENT_SECURITY_POLICY, type ConsoleRouteDeps } from './context';
export { CONSOLE_LIVE_WAIT_MS } from './handlers';

/**
 * The merchant console (docs/console.md) at /console on the internal listener: sign in with the merchant API key
 * (a POST form, never a URL), then the merchant's own applications (through the same scoped reads as the facade),
 * each one's timeline with its callbacks and a resend, and consent refreshes per bank; pages kept live through the
 * long-poll by /console/assets/console.js. Sessions are server-side (sessions.ts); every POST carries
 * the session's CSRF token and is refused from another origin.
 *
 * Signed in, every request spends the merchant's budgets as the API's do (`budgets`, the internal app's one set,
 * src/api/app.ts): its requests per minute, its long-polls (the live timeline) and its live pages held at once.
 * The sign-in counts wrong keys against the client address with the API and /codec (`failures`).
 */
export function consoleRoutes(
  deps: ConsoleRouteDeps,
  budgets: Pick<MerchantBudgets, 'requests' | 'longPolls' | 'livePages'> = merchantBudgets(deps),
  failures: FailedAuthentications = deps.authFailures ?? new FailedAuthentications(deps),
): Router {
  const sessions =
    deps.sessions ??
    new ConsoleSessions({
      ...DEFAULT_SESSION_LIMITS,
      maxSessionsPerMerchant: deps.consoleSessionsPerMerchant ?? DEFAULT_SESSION_LIMITS.maxSessionsPerMerchant,
    });
  const ctx: ConsoleContext = { deps, sessions, waits: new FinanceApplicationWaits(deps.client), budgets, failures };
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });
  const router = express.Router();

  router.use('/console', consoleHeaders());
  router.get('/console/assets/console.js', (_req, res) => {
    res.setHeader('Cache-Control', 'max-age=300');
    res.type('text/javascript').send(CONSOLE_SCRIPT);
  });
  router.get('/console/assets/console.css', (_req, res) => {
    res.setHeader('Cache-Control', 'max-age=300');
    res.type('text/css').send(CONSOLE_STYLES);
  });
  // Linked from every page; /console/favicon.ico too, for a browser that asks there anyway. A week in the cache.
  router.get(['/console/assets/favicon.svg', '/console/favicon.ico'], (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=604800');
    res.type('image/svg+xml').send(CONSOLE_FAVICON);
  });

  router.get(['/console', '/console/sign-in'], signInForm(ctx));
  // The address's failures come first: a refused attempt is neither parsed nor checked.
  router.post('/console/sign-in', failures.gate('console'), form, signIn(ctx));
  router.post('/console/sign-out', form, signOut(ctx));

  // Signed in from here on, each request under the merchant's request budget.
  router.use('/console', requireSession(ctx));
  router.get('/console/applications', listApplications(ctx));
  router.get('/console/applications/:ref', showApplication(ctx));
  router.get('/console/applications/:ref/timeline', applicationTimeline(ctx));
  router.post('/console/applications/:ref/callbacks/resend', form, resendApplicationCallback(ctx));
  router.get('/console/consents', showConsents(ctx));
  router.get('/console/consents/:consentId/refresh', refreshProgress(ctx));
  // The merchant's undelivered callbacks and the bulk resend of a range (src/api/resources/undelivered-callbacks).
  router.get('/console/callbacks', listUndeliveredCallbacks(ctx));
  router.post('/console/callbacks/resend', form, resendUndeliveredCallbacks(ctx));
  // The merchant's own callback signing secret, and its rotation (src/api/resources/callback-signing-secret).
  router.get('/console/callback-secret', showCallbackSecret(ctx));
  router.post('/console/callback-secret/rotate', form, rotateCallbackSecret(ctx));

  router.use('/console', (_req, _res, next) => next(new ConsoleError(404, 'No such page')));
  router.use('/console', consoleErrors(ctx));
  return router;
}
