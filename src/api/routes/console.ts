import { createHash } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  FinanceApplicationWaits,
  listFinanceApplications,
  TooManyStatusWaitsError,
  waitForFinanceApplicationChange,
} from '../../client/finance-applications';
import {
  NoSuchFailedDeliveryError,
  readFinanceApplicationTimeline,
  redeliverCallback,
} from '../../client/callback-deliveries';
import { getConsentRefreshProgress } from '../../client/consent-refresh';
import { ConsentNotFoundError } from '../../client/consent-claims';
import type { MerchantScope } from '../../client/merchant-scope';
import type { MerchantDirectory } from '../../config/merchants';
import { identifyApiKey, type MerchantApiKey } from '../../security/api-keys';
import { PAGE_TOKEN_PATTERN } from '../../client/finance-applications';
import { REFERENCE_PREFIX_PATTERN, STATUS_FILTER_PATTERN } from '../../shared/application-search';
import { REFERENCE_PATTERN } from '../../shared/ids';
import type { Logger } from '../../telemetry/logging';
import type { DrainSignals } from '../drain';
import type { Metrics } from '../metrics';
import { merchantBudgets, type BudgetDeps, type MerchantBudgets } from '../budgets';
import { FailedAuthentications } from '../auth-failures';
import { HttpError, PROBLEM_TITLES, ProblemType, type ProblemTypeUri } from '../problem-details';
import { CONSOLE_FAVICON, CONSOLE_SCRIPT, CONSOLE_STYLES } from '../console/assets';
import { callbackSecretPage, CONSOLE_ROTATION_GRACE_CHOICES } from '../console/secret-view';
import { callbacksPage, type CallbacksFilter } from '../console/callbacks-view';
import { readBulkResend } from '../../client/undelivered-callbacks';
import { ResendRangeSchema } from '../descriptions/undelivered-callbacks';
import { startResend, undeliveredPage } from './undelivered-callbacks';
import { readSigningSecret, rotateSigningSecret } from './callback-signing-secret';
import type { AuditLog } from '../../audit/audit-log';
import { recordAction } from '../audit';
import { DEFAULT_SERVICE_SETTINGS, parseDurationMs, type ServiceSettings } from '../../shared/application-settings';
import { loggablePath } from '../../security/redaction';
import { layout, type Html } from '../console/html';
import { ConsoleSessions, csrfMatches, DEFAULT_SESSION_LIMITS, type ConsoleSession } from '../console/sessions';
import {
  applicationPage,
  applicationsPage,
  consentsPage,
  errorPage,
  refreshFragment,
  refreshSection,
  signInPage,
  timelineFragment,
} from '../console/views';

/** The session cookie's name; its Path is /console, so no other route of the listener ever receives it. */
export const CONSOLE_COOKIE = 'paylater_console';

/**
 * The console's policy: nothing but this origin's script, style and fetches; no inline script or style, no
 * framing, forms post only here (docs/security.md, "Merchant console").
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** How long a live fragment waits for a change before answering with the page as it stands. */
export const CONSOLE_LIVE_WAIT_MS = 25_000;
/** Between reads where no long-poll exists (a consent's refresh, a closed application's resend). */
const LIVE_REREAD_MS = 2_000;

const CONSENT_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

export interface ConsoleRouteDeps extends BudgetDeps {
  /** The audit trail: a resend and a rotation are recorded before they are made (src/api/audit.ts). */
  audit?: AuditLog;
  client: Client;
  taskQueue: string;
  merchantApiKeys: readonly MerchantApiKey[];
  merchants: MerchantDirectory;
  metrics: Pick<
    Metrics,
    'merchantAuth' | 'budgetRefusals' | 'longPollsOpen' | 'livePagesOpen' | 'authRefusals' | 'consoleSignInRefusals'
  >;
  logger: Logger;
  drain?: Pick<DrainSignals, 'closing'>;
  /** The sessions (tests pass their own, with a clock); one per router otherwise. */
  sessions?: ConsoleSessions;
  /**
   * The process's count of failed authentications (FAILED_AUTHENTICATIONS_PER_15_MINUTES), shared with the API and
   * /codec; absent: one of the console's own.
   */
  authFailures?: FailedAuthentications;
  /** Sessions held per merchant (CONSOLE_SESSIONS_PER_MERCHANT); absent: DEFAULT_SESSION_LIMITS'. */
  consoleSessionsPerMerchant?: number;
  /** The service's settings: the terminal statuses say a listed application's phase (src/shared/application-phase.ts). */
  settings?: ServiceSettings;
}

/** A console error: its status and the sentence the page shows. */
class ConsoleError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The merchant console (docs/console.md) at /console on the internal listener: sign in with the merchant API key
 * (a POST form, never a URL), then the merchant's own applications (through the same scoped reads as the facade),
 * each one's timeline with its callbacks and a resend, and consent refreshes per bank; pages kept live through the
 * long-poll by /console/assets/console.js. Sessions are server-side (src/api/console/sessions.ts); every POST carries
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
  const router = express.Router();
  const sessions =
    deps.sessions ??
    new ConsoleSessions({
      ...DEFAULT_SESSION_LIMITS,
      maxSessionsPerMerchant: deps.consoleSessionsPerMerchant ?? DEFAULT_SESSION_LIMITS.maxSessionsPerMerchant,
    });
  const waits = new FinanceApplicationWaits(deps.client);
  const { longPolls, livePages } = budgets;
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });

  router.use('/console', (req, res, next) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // same-origin, not no-referrer: under no-referrer a browser's form POST says `Origin: null`, which the check below refuses.
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Cache-Control', 'no-store');
    // SameSite=Strict keeps the cookie off cross-site requests; a browser's Origin says the rest.
    if (req.method === 'POST' && !sameOrigin(req)) return next(new ConsoleError(403, 'Refused: not from this console'));
    next();
  });

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

  router.get(['/console', '/console/sign-in'], (req, res) => {
    if (sessionOf(req)) return void res.redirect(303, '/console/applications');
    page(res, 200, 'Sign in', signInPage());
  });

  // The address's failures come first: a refused attempt is neither parsed nor checked.
  router.post('/console/sign-in', failures.gate('console'), form, (req, res, next) => {
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
  });

  router.post('/console/sign-out', form, (req, res) => {
    const session = sessionOf(req);
    if (session) {
      requireCsrf(req, session);
      sessions.delete(session.id);
    }
    res.setHeader('Set-Cookie', sessionCookie(req, '', 0));
    res.redirect(303, '/console');
  });

  // Every other console route needs a session: pages send the browser to sign in, fragments answer 401. Signed in,
  // the request spends the merchant's request budget, the API's own (one count for both).
  router.use('/console', (req, res, next) => {
    const session = sessionOf(req);
    if (session) {
      Object.assign(res.locals as { console?: ConsoleSession; merchant?: string }, {
        console: session,
        merchant: session.merchantId,
      });
      return budgets.requests(req, res, next);
    }
    if (req.method === 'GET' && !isFragment(req)) return void res.redirect(303, '/console/sign-in');
    next(new ConsoleError(401, 'Sign in first'));
  });

  router.get('/console/applications', async (req, res) => {
    const session = current(res);
    const reference = queryText(req, 'reference', REFERENCE_PREFIX_PATTERN, 'a reference prefix');
    const status = queryText(req, 'status', STATUS_FILTER_PATTERN, 'a status');
    const pageToken = queryText(req, 'pageToken', PAGE_TOKEN_PATTERN, 'a page token');
    let list;
    try {
      list = await listFinanceApplications(
        deps.client,
        scope(session),
        { ...(reference ? { referencePrefix: reference } : {}), ...(status ? { status } : {}) },
        { pageSize: 25, ...(pageToken ? { pageToken } : {}) },
        { terminalStatuses: (deps.settings ?? DEFAULT_SERVICE_SETTINGS).applications.terminalStatuses },
      );
    } catch (err) {
      if (err instanceof RangeError) throw new ConsoleError(400, err.message);
      throw err;
    }
    page(res, 200, 'Applications', applicationsPage(list, { reference, status, pageToken }), session);
  });

  router.get('/console/applications/:ref', async (req, res) => {
    const session = current(res);
    const ref = referenceOf(req);
    const timeline = await notFoundAs(readFinanceApplicationTimeline(deps.client, scope(session), ref));
    page(res, 200, `Application ${ref}`, applicationPage(ref, timeline, session.csrfToken), session);
  });

  // The live fragment: with waitFrom, answers when the status differs (the facade's long-poll) or after its wait.
  router.get('/console/applications/:ref/timeline', async (req, res) => {
    const session = current(res);
    const ref = referenceOf(req);
    const merchant = scope(session);
    const waitFrom = req.query.waitFrom;
    if (
      waitFrom !== undefined &&
      (typeof waitFrom !== 'string' || !(waitFrom === '' || STATUS_FILTER_PATTERN.test(waitFrom)))
    )
      throw new ConsoleError(400, 'waitFrom must be a status');
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    if (typeof waitFrom === 'string') {
      // A live page held, and a long-poll of the merchant's (the API's budget: one count for both).
      const releasePage = livePages.tryAcquire(merchant.merchantId);
      if (!releasePage) throw livePages.refusal(merchant.merchantId, res);
      const release = longPolls.tryAcquire(merchant.merchantId);
      if (!release) {
        releasePage();
        throw longPolls.refusal(merchant.merchantId, res);
      }
      try {
        const { state } = await notFoundAs(readFinanceApplicationTimeline(deps.client, merchant, ref));
        // Nothing to long-poll on (not created yet, or closed: only a resend may still change): read again shortly.
        if (state.done || state.status === undefined || waitFrom === '') await pause(LIVE_REREAD_MS, gone.signal);
        else
          await notFoundAs(
            waitForFinanceApplicationChange(deps.client, merchant, ref, {
              fromStatus: waitFrom,
              timeoutMs: CONSOLE_LIVE_WAIT_MS,
              waits,
              signal: gone.signal,
              endEarly: deps.drain?.closing,
            }),
          ).catch((err: unknown) => {
            if (!(err instanceof TooManyStatusWaitsError)) throw err;
            return pause(LIVE_REREAD_MS, gone.signal);
          });
      } finally {
        release();
        releasePage();
      }
      if (gone.signal.aborted) return;
    }
    const timeline = await notFoundAs(readFinanceApplicationTimeline(deps.client, merchant, ref));
    const resending = timeline.deliveries.some((d) => d.resend?.state === 'running');
    res.setHeader('X-Console-Status', timeline.state.status ?? '');
    res.setHeader('X-Console-Done', String(timeline.phase === 'closed' && !timeline.inFlight && !resending));
    res.type('text/html').send(timelineFragment(ref, timeline, session.csrfToken).text);
  });

  router.post('/console/applications/:ref/callbacks/resend', form, async (req, res) => {
    const session = current(res);
    requireCsrf(req, session);
    const ref = referenceOf(req);
    const key = (req.body as Record<string, unknown>).key;
    if (typeof key !== 'string' || key === '' || key.length > 512) throw new ConsoleError(400, 'key is required');
    await recordAction(deps, {
      actor: { kind: 'merchant', name: session.merchantId },
      action: 'callback.resend',
      target: { kind: 'application', id: ref },
      details: { idempotencyKey: key, via: 'console' },
    }).catch((err: unknown) => {
      throw err instanceof HttpError ? new ConsoleError(err.status, err.message) : err;
    });
    try {
      await redeliverCallback(deps.client, scope(session), ref, key, { taskQueue: deps.taskQueue });
    } catch (err) {
      if (err instanceof NoSuchFailedDeliveryError) throw new ConsoleError(404, 'No failed callback with this key');
      throw notFound(err);
    }
    deps.logger.info({ merchant: session.merchantId, merchantReference: ref }, 'console: callback sent again');
    res.redirect(303, `/console/applications/${encodeURIComponent(ref)}`);
  });

  router.get('/console/consents', async (req, res) => {
    const session = current(res);
    const consentId = queryText(req, 'consentId', CONSENT_ID_PATTERN, 'a consent id');
    let section: Html | undefined;
    if (consentId) {
      const progress = await refreshOf(deps.client, scope(session), consentId);
      section = refreshSection(consentId, progress, fingerprint(progress));
    }
    page(res, 200, 'Consent refreshes', consentsPage(consentId, section), session);
  });

  // The live fragment of a refresh: answers when its progress differs from `since`, or after the wait.
  router.get('/console/consents/:consentId/refresh', async (req, res) => {
    const session = current(res);
    const { consentId } = req.params;
    if (!CONSENT_ID_PATTERN.test(consentId)) throw new ConsoleError(404, 'No such consent');
    const since = typeof req.query.since === 'string' ? req.query.since : undefined;
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    // Waiting for a change holds one of the merchant's live pages (each reads Temporal every LIVE_REREAD_MS).
    const releasePage = since === undefined ? () => {} : livePages.tryAcquire(session.merchantId);
    if (!releasePage) throw livePages.refusal(session.merchantId, res);
    const until = Date.now() + CONSOLE_LIVE_WAIT_MS;
    let progress;
    try {
      progress = await refreshOf(deps.client, scope(session), consentId);
      // The refresh workflow has no wait of its own: its query is read again every LIVE_REREAD_MS while unchanged.
      while (since !== undefined && fingerprint(progress) === since && !progress.done && Date.now() < until) {
        await pause(LIVE_REREAD_MS, gone.signal);
        if (gone.signal.aborted || deps.drain?.closing.aborted) break;
        progress = await refreshOf(deps.client, scope(session), consentId);
      }
    } finally {
      releasePage();
    }
    if (gone.signal.aborted) return;
    res.setHeader('X-Console-Fingerprint', fingerprint(progress));
    res.setHeader('X-Console-Done', String(progress.done));
    res.type('text/html').send(refreshFragment(progress).text);
  });

  // The merchant's undelivered callbacks and the bulk resend of a range (src/api/routes/undelivered-callbacks.ts).
  router.get('/console/callbacks', async (req, res) => {
    const session = current(res);
    const filter = callbacksFilter(req.query);
    const pageToken = queryText(req, 'pageToken', /^[A-Za-z0-9_-]{1,1024}$/, 'a page token');
    const range = rangeOf(filter);
    const list = await undeliveredPage(deps.client, [session.merchantId], {
      ...(range ? { since: range.since, until: range.until } : {}),
      ...(filter.since && !range ? { since: instantOf(filter.since) } : {}),
      ...(filter.until && !range ? { until: instantOf(filter.until) } : {}),
      ...(filter.type ? { type: filter.type } : {}),
      pageSize: 50,
      ...(pageToken ? { pageToken } : {}),
    });
    const resend = range ? await readBulkResend(deps.client, session.merchantId, range) : undefined;
    page(res, 200, 'Undelivered callbacks', callbacksPage(filter, list, resend, session.csrfToken), session);
  });

  router.post('/console/callbacks/resend', form, async (req, res) => {
    const session = current(res);
    requireCsrf(req, session);
    const filter = callbacksFilter(req.body as Record<string, unknown>);
    const range = rangeOf(filter);
    if (!range) throw new ConsoleError(400, 'Choose a range: from and until');
    const { client, taskQueue, merchants, logger, audit } = deps;
    await startResend({ client, taskQueue, merchants, logger, audit }, session.merchantId, range, 'console').catch(
      (err: unknown) => {
        throw err instanceof HttpError ? new ConsoleError(err.status, err.message) : err;
      },
    );
    const back = new URLSearchParams(Object.entries(filter).filter((e): e is [string, string] => !!e[1]));
    res.redirect(303, `/console/callbacks?${back.toString()}`);
  });

  // The merchant's own callback signing secret, and its rotation (src/api/routes/callback-signing-secret.ts).
  router.get('/console/callback-secret', async (_req, res) => {
    const session = current(res);
    const view = await readSigningSecret(deps, session.merchantId);
    page(res, 200, 'Callback signing secret', callbackSecretPage(view, session.csrfToken), session);
  });

  router.post('/console/callback-secret/rotate', form, async (req, res) => {
    const session = current(res);
    requireCsrf(req, session);
    const grace = (req.body as Record<string, unknown>).gracePeriod;
    if (!CONSOLE_ROTATION_GRACE_CHOICES.some((c) => c.value === grace))
      throw new ConsoleError(400, 'gracePeriod must be one of the choices offered');
    const { client, taskQueue, merchants, logger, audit } = deps;
    await rotateSigningSecret(
      { client, taskQueue, merchants, logger, audit },
      session.merchantId,
      parseDurationMs(grace as string)!,
      'console',
    ).catch((err: unknown) => {
      throw err instanceof HttpError ? new ConsoleError(err.status, err.message) : err;
    });
    res.redirect(303, '/console/callback-secret');
  });

  router.use('/console', (_req, _res, next) => next(new ConsoleError(404, 'No such page')));

  // The console answers its errors as pages (or plain text to the live script), never as the facade's JSON; a
  // budget's or the sign-in's 429 keeps its Retry-After and RateLimit fields.
  router.use('/console', (err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    // The browser left (a live page closed or navigated away mid-wait): nobody to answer, and nothing went wrong.
    // (Not req.destroyed: a request whose body was read is destroyed too, and would never be answered.)
    if (res.destroyed || res.closed || req.socket.destroyed) {
      deps.logger.debug({ path: loggablePath(req.path) }, 'console: the browser left before the answer');
      return;
    }
    const refused = err instanceof HttpError && err.status < 500 ? err : undefined;
    const status = err instanceof ConsoleError ? err.status : (refused?.status ?? 500);
    if (status === 500) deps.logger.error({ err }, 'console request failed');
    if (refused?.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(refused.retryAfterSeconds));
    for (const [name, value] of Object.entries(refused?.headers ?? {})) res.setHeader(name, value);
    if (refused?.problemType === ProblemType.TooManyWrongKeys) {
      const minutes = Math.max(1, Math.ceil(Number(res.getHeader('Retry-After') ?? 60) / 60));
      const message = `Too many failed sign-ins from this address: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`;
      return page(res, 429, 'Too many sign-in attempts', errorPage(message, SIGN_IN_LINK));
    }
    const message =
      status === 500
        ? 'Something went wrong; try again'
        : status === 429 && refused
          ? busy(refused, Number(res.getHeader('Retry-After') ?? 1))
          : (err as Error).message;
    if (isFragment(req)) return void res.status(status).type('text/plain').send(message);
    const session = sessionOf(req);
    page(res, status, message, errorPage(message), session);
  });

  function sessionOf(req: Request): ConsoleSession | undefined {
    const session = sessions.get(cookieValue(req.headers.cookie, CONSOLE_COOKIE));
    // A key removed from MERCHANT_API_KEYS ends its sessions: the merchant must still hold a key.
    if (session && !deps.merchantApiKeys.some((k) => k.name === session.merchantId)) {
      sessions.delete(session.id);
      return undefined;
    }
    return session;
  }

  return router;
}

const SIGN_IN_LINK = { href: '/console/sign-in', label: 'Back to sign in' };

/** A budget's refusal in the console's words: what ran out, and when to try again. */
function busy(refused: HttpError, retryAfterSeconds: number): string {
  const title = PROBLEM_TITLES[refused.problemType as ProblemTypeUri] ?? 'Too many requests';
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return `${title} for this merchant: try again in ${seconds} second${seconds === 1 ? '' : 's'}`;
}

function current(res: Response): ConsoleSession {
  const session = (res.locals as { console?: ConsoleSession }).console;
  if (!session) throw new Error('console route reached without a session');
  return session;
}

const scope = (session: ConsoleSession): MerchantScope => ({ merchantId: session.merchantId });

function page(res: Response, status: number, title: string, body: Html, session?: ConsoleSession): void {
  res
    .status(status)
    .type('text/html')
    .send(layout({ title, body, merchantId: session?.merchantId, csrfToken: session?.csrfToken }));
}

function requireCsrf(req: Request, session: ConsoleSession): void {
  if (!csrfMatches(session, (req.body as Record<string, unknown> | undefined)?.csrf))
    throw new ConsoleError(403, 'Refused: the form is missing its session token; reload the page and try again');
}

/** The live script's requests (fetch with Accept: text/html to a fragment path). */
function isFragment(req: Request): boolean {
  return /\/(timeline|refresh)$/.test(req.path);
}

/** A browser's POST carries Origin: it must be this host (absent: not a browser, or a same-origin navigation). */
function sameOrigin(req: Request): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/** HttpOnly, SameSite=Strict, Path=/console; Secure when the request came over https (or a proxy says so: it only tightens). */
export function sessionCookie(req: Request, value: string, maxAgeSeconds = 8 * 3600): string {
  const https = req.secure || req.headers['x-forwarded-proto'] === 'https';
  return [
    `${CONSOLE_COOKIE}=${value}`,
    'Path=/console',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeSeconds}`,
    ...(https ? ['Secure'] : []),
  ].join('; ');
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function referenceOf(req: Request): string {
  const ref = String(req.params.ref);
  if (!REFERENCE_PATTERN.test(ref)) throw new ConsoleError(404, `No application ${ref}`);
  return ref;
}

function queryText(req: Request, name: string, pattern: RegExp, what: string): string | undefined {
  const value = req.query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !pattern.test(value)) throw new ConsoleError(400, `${name} must be ${what}`);
  return value;
}

/** The callbacks page's filters as typed (a datetime-local input is UTC here: the page says so). */
function callbacksFilter(source: Record<string, unknown>): CallbacksFilter {
  const text = (name: string) => {
    const value = source[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const filter = { since: text('since'), until: text('until'), type: text('type') };
  for (const name of ['since', 'until'] as const)
    if (filter[name] !== undefined && instantOf(filter[name]) === undefined)
      throw new ConsoleError(400, `${name} must be a date and time`);
  if (filter.type !== undefined && !/^[a-z][a-z0-9.-]{0,63}$/.test(filter.type))
    throw new ConsoleError(400, 'type must be an event type such as finance-application.status-changed');
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined));
}

/** `YYYY-MM-DDTHH:MM[:SS]` (UTC) or RFC 3339, as ISO; undefined when it is neither. */
function instantOf(value: string): string | undefined {
  const withZone = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value) ? `${value}Z` : value;
  const ms = Date.parse(withZone);
  return Number.isNaN(ms) || !/^\d{4}-/.test(value) ? undefined : new Date(ms).toISOString();
}

/** The filter's range as the bulk resend takes it (the API's checks: order, at most 31 days), when both ends are set. */
function rangeOf(filter: CallbacksFilter): { since: string; until: string; type?: string } | undefined {
  if (filter.since === undefined || filter.until === undefined) return undefined;
  const parsed = ResendRangeSchema.safeParse({
    since: instantOf(filter.since),
    until: instantOf(filter.until),
    ...(filter.type ? { type: filter.type } : {}),
  });
  if (!parsed.success)
    throw new ConsoleError(400, `The range: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  return parsed.data;
}

function notFound(err: unknown): unknown {
  return err instanceof WorkflowNotFoundError ? new ConsoleError(404, 'No such application') : err;
}

async function notFoundAs<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    throw notFound(err);
  }
}

async function refreshOf(client: Client, merchant: MerchantScope, consentId: string) {
  try {
    return await getConsentRefreshProgress(client, merchant, consentId);
  } catch (err) {
    if (err instanceof ConsentNotFoundError || err instanceof WorkflowNotFoundError)
      throw new ConsoleError(404, `No refresh of consent ${consentId} for this merchant`);
    throw err;
  }
}

/** What the refresh page shows, hashed: the live script waits for it to change. */
function fingerprint(progress: object): string {
  return createHash('sha256').update(JSON.stringify(progress)).digest('base64url').slice(0, 22);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
