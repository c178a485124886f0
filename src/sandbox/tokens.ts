import { randomBytes } from 'node:crypto';
import type { Clock } from './types';

/** Opaque random bearer tokens with an expiry; revocation forgets them all. */
export class TokenStore {
  private readonly tokens = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlSeconds: number,
  ) {}

  issue(): { token: string; expiresIn: number } {
    this.prune();
    const token = randomBytes(32).toString('base64url');
    this.tokens.set(token, this.clock() + this.ttlSeconds * 1000);
    return { token, expiresIn: this.ttlSeconds };
  }

  /** Why a token is not accepted, or null when it is. */
  check(token: string): 'unknown' | 'expired' | null {
    const expiresAt = this.tokens.get(token);
    if (expiresAt === undefined) return 'unknown';
    if (this.clock() >= expiresAt) return 'expired';
    return null;
  }

  revokeAll(): void {
    this.tokens.clear();
  }

  private prune(): void {
    const now = this.clock();
    for (const [token, expiresAt] of this.tokens) if (now >= expiresAt + 3_600_000) this.tokens.delete(token);
  }
}
