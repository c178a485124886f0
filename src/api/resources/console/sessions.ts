import { randomBytes, timingSafeEqual } from 'node:crypto';
import { DEFAULT_CONSOLE_SESSIONS_PER_MERCHANT } from '../../../config/schema';

/**
 * The console's sessions, held in the API process (docs/decisions/0042-console-sessions.md): the cookie carries a
 * random id and nothing else; the key a merchant signed in with is never kept. Sign-out deletes the session, so a
 * copied cookie stops working at once. Bounded: idle and absolute lifetimes, and a cap per merchant. A merchant's new
 * session past its cap ends its own least recently used one, never another merchant's: sign-ins succeed without limit
 * for whoever holds the key, so a shared cap would let one merchant sign every other one out.
 */
export interface ConsoleSession {
  id: string;
  merchantId: string;
  /** The per-session CSRF token: every state-changing form and request carries it (`csrf` field). */
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
}

export interface SessionLimits {
  /** Signed out after this long without a request (default 30 minutes). */
  idleMs: number;
  /** Signed out this long after sign-in, however active (default 8 hours). */
  absoluteMs: number;
  /**
   * At most this many sessions per merchant (CONSOLE_SESSIONS_PER_MERCHANT); the merchant's least recently used goes
   * first. The store holds at most this many times the number of merchants.
   */
  maxSessionsPerMerchant: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  idleMs: 30 * 60_000,
  absoluteMs: 8 * 3_600_000,
  maxSessionsPerMerchant: DEFAULT_CONSOLE_SESSIONS_PER_MERCHANT,
};

/** 32 random bytes as base64url: a session id or a CSRF token. */
const token = (): string => randomBytes(32).toString('base64url');

const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export class ConsoleSessions {
  private readonly sessions = new Map<string, ConsoleSession>();
  // Each merchant's sessions; a Map keeps insertion order and touching a session re-inserts it, so a merchant's first
  // entry is its least recently used.
  private readonly byMerchant = new Map<string, Map<string, ConsoleSession>>();

  constructor(
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** A new session of the merchant; past its cap, the merchant's own expired, then least recently used, end. */
  create(merchantId: string): ConsoleSession {
    const at = this.now();
    const session = { id: token(), merchantId, csrfToken: token(), createdAt: at, lastSeenAt: at };
    for (const held of [...(this.byMerchant.get(merchantId)?.values() ?? [])])
      if (this.expired(held, at)) this.delete(held.id);
    let own = this.byMerchant.get(merchantId);
    if (!own) this.byMerchant.set(merchantId, (own = new Map<string, ConsoleSession>()));
    own.set(session.id, session);
    this.sessions.set(session.id, session);
    while (own.size > this.limits.maxSessionsPerMerchant) this.delete(own.keys().next().value!);
    return session;
  }

  /** The live session of this id (its idle clock restarted), or undefined. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined || !SESSION_ID_PATTERN.test(id)) return undefined;
    const session = this.sessions.get(id);
    if (!session) return undefined;
    const at = this.now();
    if (this.expired(session, at)) {
      this.delete(id);
      return undefined;
    }
    session.lastSeenAt = at;
    const own = this.byMerchant.get(session.merchantId)!;
    own.delete(id);
    own.set(id, session);
    return session;
  }

  delete(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    const own = this.byMerchant.get(session.merchantId);
    own?.delete(id);
    if (own?.size === 0) this.byMerchant.delete(session.merchantId);
  }

  private expired(session: ConsoleSession, at: number): boolean {
    return at - session.lastSeenAt > this.limits.idleMs || at - session.createdAt > this.limits.absoluteMs;
  }
}

/** Whether `presented` is the session's CSRF token (constant time). */
export function csrfMatches(session: ConsoleSession, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrfToken);
  return a.length === b.length && timingSafeEqual(a, b);
}
