import { randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The console's sessions, held in the API process (docs/decisions/0042-console-sessions.md): the cookie carries a
 * random id and nothing else; the key a merchant signed in with is never kept. Sign-out deletes the session, so a
 * copied cookie stops working at once. Bounded: idle and absolute lifetimes, and a cap on how many are held.
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
  /** At most this many sessions; the least recently used goes first (default 10,000). */
  maxSessions: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  idleMs: 30 * 60_000,
  absoluteMs: 8 * 3_600_000,
  maxSessions: 10_000,
};

/** 32 random bytes as base64url: a session id or a CSRF token. */
const token = (): string => randomBytes(32).toString('base64url');

const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export class ConsoleSessions {
  // A Map keeps insertion order: touching a session re-inserts it, so the first entry is the least recently used.
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  create(merchantId: string): ConsoleSession {
    const at = this.now();
    const session = { id: token(), merchantId, csrfToken: token(), createdAt: at, lastSeenAt: at };
    this.sessions.set(session.id, session);
    while (this.sessions.size > this.limits.maxSessions) {
      this.sessions.delete(this.sessions.keys().next().value!);
    }
    return session;
  }

  /** The live session of this id (its idle clock restarted), or undefined. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined || !SESSION_ID_PATTERN.test(id)) return undefined;
    const session = this.sessions.get(id);
    if (!session) return undefined;
    const at = this.now();
    if (at - session.lastSeenAt > this.limits.idleMs || at - session.createdAt > this.limits.absoluteMs) {
      this.sessions.delete(id);
      return undefined;
    }
    session.lastSeenAt = at;
    this.sessions.delete(id);
    this.sessions.set(id, session);
    return session;
  }

  delete(id: string): void {
    this.sessions.delete(id);
  }
}

/** Whether `presented` is the session's CSRF token (constant time). */
export function csrfMatches(session: ConsoleSession, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrfToken);
  return a.length === b.length && timingSafeEqual(a, b);
}
