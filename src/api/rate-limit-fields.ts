import { createHash } from 'node:crypto';
import type { Response } from 'express';

/**
 * The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers-08) for the budgets express-rate-limit does not
 * count itself: long-polls and live pages held at once, totals counted in Temporal, an address refused before its
 * key is checked. Written as express-rate-limit's `draft-8` writes its own (src/api/budgets.ts), appended, so an
 * answer names every policy it was checked against and the one at zero is the one that refused.
 */

/** express-rate-limit's partition key of a key (the first 12 hex digits of its SHA-256, base64): the same per key. */
export function partitionKey(key: string): string {
  return Buffer.from(createHash('sha256').update(key).digest('hex').slice(0, 12)).toString('base64');
}

export interface RateLimitPolicy {
  /** The policy's name (`"merchant-long-polls"`). */
  name: string;
  /** Its quota (q). */
  quota: number;
  /** Its window in seconds (w); absent for a budget of things held at once, which has none. */
  windowSeconds?: number;
  /** Whose quota it is (a merchant, an address): sent hashed only (pk). */
  key: string;
}

/** Appends `RateLimit-Policy` and `RateLimit` for one policy: what is left of it and the seconds until more is. */
export function appendRateLimitFields(
  res: Response,
  policy: RateLimitPolicy,
  state: { remaining: number; resetSeconds: number },
): void {
  if (res.headersSent) return;
  const window = policy.windowSeconds === undefined ? '' : `; w=${policy.windowSeconds}`;
  res.append('RateLimit-Policy', `"${policy.name}"; q=${policy.quota}${window}; pk=:${partitionKey(policy.key)}:`);
  res.append('RateLimit', `"${policy.name}"; r=${Math.max(0, state.remaining)}; t=${Math.max(0, state.resetSeconds)}`);
}
