/**
 * What the console's handlers share (routes.ts builds it once per router): its deps, the sessions, the merchant
 * budgets and the count of wrong keys, and the helpers every page uses.
 */

import type { Request, Response } from 'express';
import type { Client } from '@temporalio/client';
import type { FinanceApplicationWaits } from '../../../client/finance-applications';
import type { MerchantScope } from '../../../client/merchant-scope';
import type { MerchantDirectory } from '../../../config/merchants';
import type { MerchantApiKey } from '../../../security/api-keys';
import type { Logger } from '../../../telemetry/logging';
import type { AuditLog } from '../../../audit/audit-log';
import type { ServiceSettings } from '../../../shared/application-settings';
import type { DrainSignals } from '../../drain';
import type { Metrics } from '../../metrics';
import type { BudgetDeps, MerchantBudgets } from '../../budgets';
import type { FailedAuthentications } from '../../auth-failures';
import { layout, type Html } from './html';
import { csrfMatches, type ConsoleSession, type ConsoleSessions } from './sessions';

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

/** What each console handler is given (one per router, made by consoleRoutes). */
export interface ConsoleContext {
  deps: ConsoleRouteDeps;
  sessions: ConsoleSessions;
  /** This router's shared status waits (one update per application and from-status). */
  waits: FinanceApplicationWaits;
  budgets: Pick<MerchantBudgets, 'requests' | 'longPolls' | 'livePages'>;
  failures: FailedAuthentications;
}

/** A console error: its status and the sentence the page shows. */
export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const SIGN_IN_LINK = { href: '/console/sign-in', label: 'Back to sign in' };

export function current(res: Response): ConsoleSession {
  const session = (res.locals as { console?: ConsoleSession }).console;
  if (!session) throw new Error('console route reached without a session');
  return session;
}

export const scope = (session: ConsoleSession): MerchantScope => ({ merchantId: session.merchantId });

export function page(res: Response, status: number, title: string, body: Html, session?: ConsoleSession): void {
  res
    .status(status)
    .type('text/html')
    .send(layout({ title, body, merchantId: session?.merchantId, csrfToken: session?.csrfToken }));
}

export function requireCsrf(req: Request, session: ConsoleSession): void {
  if (!csrfMatches(session, (req.body as Record<string, unknown> | undefined)?.csrf))
    throw new ConsoleError(403, 'Refused: the form is missing its session token; reload the page and try again');
}

/** The live script's requests (fetch with Accept: text/html to a fragment path). */
export function isFragment(req: Request): boolean {
  return /\/(timeline|refresh)$/.test(req.path);
}

/** A browser's POST carries Origin: it must be this host (absent: not a browser, or a same-origin navigation). */
export function sameOrigin(req: Request): boolean {
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

/** The request's session, while its merchant still holds a key. */
export function sessionOf({ deps, sessions }: ConsoleContext, req: Request): ConsoleSession | undefined {
  const session = sessions.get(cookieValue(req.headers.cookie, CONSOLE_COOKIE));
  // A key removed from MERCHANT_API_KEYS ends its sessions: the merchant must still hold a key.
  if (session && !deps.merchantApiKeys.some((k) => k.name === session.merchantId)) {
    sessions.delete(session.id);
    return undefined;
  }
  return session;
}
