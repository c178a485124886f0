import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Merchant API keys (MERCHANT_API_KEYS = `name:key,name:key`). The name says whose key it is (logs and metric
 * labels carry it); the key itself is a secret: it is never logged, echoed in an error or put in a label.
 * Revoking a merchant's key = removing its entry (and restarting the internal listener's processes).
 */
export interface MerchantApiKey {
  name: string;
  key: string;
}

export const MIN_API_KEY_LENGTH = 24;
const MAX_API_KEY_LENGTH = 512;
/** Names end up in logs and metric labels: short and plain. */
export const API_KEY_NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** Visible ASCII except the list's own separators (`,`) and quotes: what a header and an env file carry safely. */
const API_KEY_PATTERN = /^[\x21\x23-\x2b\x2d-\x7e]+$/;

/**
 * Parses MERCHANT_API_KEYS. Problems name the entry (by position and, once known, by name), never its key:
 * an entry without a colon may be a bare key, so not even that is echoed.
 */
export function parseMerchantApiKeys(raw: string): { keys: MerchantApiKey[]; problems: string[] } {
  const keys: MerchantApiKey[] = [];
  const problems: string[] = [];
  const entries = raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) problems.push('lists no key: expected name:key,name:key');
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const where = `entry ${i + 1}`;
    if (colon === -1) {
      problems.push(`${where} is not name:key`);
      return;
    }
    const name = entry.slice(0, colon).trim();
    const key = entry.slice(colon + 1).trim();
    if (!API_KEY_NAME_PATTERN.test(name)) {
      problems.push(`${where}: the name must be 1 to 64 of A-Z a-z 0-9 . _ -`);
      return;
    }
    if (key.length < MIN_API_KEY_LENGTH) {
      problems.push(`${where} ("${name}"): the key must be at least ${MIN_API_KEY_LENGTH} characters`);
      return;
    }
    if (key.length > MAX_API_KEY_LENGTH || !API_KEY_PATTERN.test(key)) {
      problems.push(`${where} ("${name}"): the key must be at most ${MAX_API_KEY_LENGTH} visible ASCII characters`);
      return;
    }
    if (keys.some((k) => k.name === name)) {
      problems.push(`${where}: the name "${name}" is used twice (one key per name, so a name can be revoked)`);
      return;
    }
    const same = keys.find((k) => k.key === key);
    if (same) {
      problems.push(`${where} ("${name}") has the same key as "${same.name}": each merchant needs its own key`);
      return;
    }
    keys.push({ name, key });
  });
  return { keys, problems };
}

/** A development key for the embedded stack: 32 random bytes, base64url (43 characters). */
export function generateApiKey(): string {
  return randomBytes(32).toString('base64url');
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Digests of the configured keys, computed once per list (the list may be swapped at runtime, as tests do). */
const digestsOf = new WeakMap<readonly MerchantApiKey[], { name: string; digest: Buffer }[]>();

/**
 * The name of the merchant whose key was presented, or undefined. Both sides are hashed with SHA-256 (equal
 * lengths for timingSafeEqual, so the key's length does not leak either) and the presented key is compared with
 * every configured key, with no early exit: the time taken says nothing about which key, or how much of one,
 * matched.
 */
export function identifyMerchant(keys: readonly MerchantApiKey[], presented: string): string | undefined {
  let digests = digestsOf.get(keys);
  if (!digests) {
    digests = keys.map((k) => ({ name: k.name, digest: sha256(k.key) }));
    digestsOf.set(keys, digests);
  }
  const candidate = sha256(presented);
  let found: string | undefined;
  for (const { name, digest } of digests) {
    if (timingSafeEqual(candidate, digest) && found === undefined) found = name;
  }
  return found;
}
