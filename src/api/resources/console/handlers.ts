/** The console's pages and live fragments, signed in (routes.ts puts the session check in front of them). */

import { createHash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  listFinanceApplications,
  PAGE_TOKEN_PATTERN,
  TooManyStatusWaitsError,
  waitForFinanceApplicationChange,
} from '../../../client/finance-applications';
import {
  NoSuchFailedDeliveryError,
  readFinanceApplicationTimeline,
  redeliverCallback,
} from '../../../client/callback-deliveries';
import { getConsentRefreshProgress } from '../../../client/consent-refresh';
import { ConsentNotFoundError } from '../../../client/consent-claims';
import type { MerchantScope } from '../../../client/merchant-scope';
import { readBulkResend } from '../../../client/undelivered-callbacks';
import { REFERENCE_PREFIX_PATTERN, STATUS_FILTER_PATTERN } from '../../../shared/application-search';
import { REFERENCE_PATTERN } from '../../../shared/ids';
import { DEFAULT_SERVICE_SETTINGS, parseDurationMs } from '../../../shared/application-settings';
import { recordAction } from '../../audit';
import { HttpError } from '../../problem-details';
import { ResendRangeSchema } from '../undelivered-callbacks/schemas';
import { startResend, undeliveredPage } from '../undelivered-callbacks/handlers';
import { readSigningSecret, rotateSigningSecret } from '../callback-signing-secret/handlers';
import { callbackSecretPage, CONSOLE_ROTATION_GRACE_CHOICES } from './secret-view';
import { callbacksPage, type CallbacksFilter } from './callbacks-view';
import type { Html } from './html';
import {
  applicationPage,
  applicationsPage,
  consentsPage,
  refreshFragment,
  refreshSection,
  timelineFragment,
} from './views';
import { ConsoleError, current, page, requireCsrf, scope, type ConsoleContext } from './context';

/** How long a live fragment waits for a change before answering with the page as it stands. */
export const CONSOLE_LIVE_WAIT_MS = 25_000;
/** Between reads where no long-poll exists (a consent's refresh, a closed application's resend). */
const LIVE_REREAD_MS = 2_000;

const CONSENT_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** The merchant's applications, filtered by reference prefix and status, 25 a page. */
export function listApplications(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
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
  };
}

/** One application's page: its timeline, callbacks and resend. */
export function showApplication(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
    const session = current(res);
    const ref = referenceOf(req);
    const timeline = await notFoundAs(readFinanceApplicationTimeline(deps.client, scope(session), ref));
    page(res, 200, `Application ${ref}`, applicationPage(ref, timeline, session.csrfToken), session);
  };
}

/** The live fragment: with waitFrom, answers when the status differs (the facade's long-poll) or after its wait. */
export function applicationTimeline(ctx: ConsoleContext): RequestHandler {
  const { deps, waits } = ctx;
  const { longPolls, livePages } = ctx.budgets;
  return async (req, res) => {
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
  };
}

/** Sends one failed callback of an application again (recorded in the audit trail first). */
export function resendApplicationCallback(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
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
  };
}

/** The consent page: a consent's latest refresh, per bank. */
export function showConsents(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
    const session = current(res);
    const consentId = queryText(req, 'consentId', CONSENT_ID_PATTERN, 'a consent id');
    let section: Html | undefined;
    if (consentId) {
      const progress = await refreshOf(deps.client, scope(session), consentId);
      section = refreshSection(consentId, progress, fingerprint(progress));
    }
    page(res, 200, 'Consent refreshes', consentsPage(consentId, section), session);
  };
}

/** The live fragment of a refresh: answers when its progress differs from `since`, or after the wait. */
export function refreshProgress(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  const { livePages } = ctx.budgets;
  return async (req, res) => {
    const session = current(res);
    const { consentId } = req.params;
    if (typeof consentId !== 'string' || !CONSENT_ID_PATTERN.test(consentId))
      throw new ConsoleError(404, 'No such consent');
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
  };
}

/** The merchant's undelivered callbacks (src/api/resources/undelivered-callbacks/handlers.ts). */
export function listUndeliveredCallbacks(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
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
  };
}

/** The bulk resend of a range of undelivered callbacks. */
export function resendUndeliveredCallbacks(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
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
  };
}

/** The merchant's own callback signing secret (src/api/resources/callback-signing-secret/handlers.ts). */
export function showCallbackSecret(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (_req, res) => {
    const session = current(res);
    const view = await readSigningSecret(deps, session.merchantId);
    page(res, 200, 'Callback signing secret', callbackSecretPage(view, session.csrfToken), session);
  };
}

/** Rotates the signing secret, the old one valid for the grace period chosen. */
export function rotateCallbackSecret(ctx: ConsoleContext): RequestHandler {
  const { deps } = ctx;
  return async (req, res) => {
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
  };
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
