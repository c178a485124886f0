import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys of merchants (MERCHANT_API_KEYS) and of operators (OPERATOR_API_KEYS), both `name:key,name:key`. The
 * name says whose key it is (logs and metric labels carry it); the key itself is a secret: it is never logged,
 * echoed in an error or put in a label. Revoking a key = removing its entry (and restarting the internal listener's
 * processes).
 */
export interface ApiKey {
  name: string;
  key: string;
}
/** A merchant's key: opens the merchant facade. */
export type MerchantApiKey = ApiKey;
/** An operator's key: opens the operator routes (/codec), never the facade. */
export type OperatorApiKey = ApiKey;
/** Who holds the keys of a list: named in its problems. */
export type ApiKeyHolder = 'merchant' | 'operator';

export const MIN_API_KEY_LENGTH = 24;
const MAX_API_KEY_LENGTH = 512;
/** Names end up in logs and metric labels: short and plain. */
export const API_KEY_NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** Visible ASCII except the list's own separators (`,`) and quotes: what a header and an env file carry safely. */
const API_KEY_PATTERN = /^[\x21\x23-\x2b\x2d-\x7e]+$/;

/**
 * Parses MERCHANT_API_KEYS or OPERATOR_API_KEYS. Problems name the entry (by position and, once known, by name),
 * never its key: an entry without a colon may be a bare key, so not even that is echoed.
 */
export function parseApiKeys(raw: string, holder: ApiKeyHolder): { keys: ApiKey[]; problems: string[] } {
  const keys: ApiKey[] = [];
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
      problems.push(`${where} ("${name}") has the same key as "${same.name}": each ${holder} needs its own key`);
      return;
    }
    keys.push({ name, key });
  });
  return { keys, problems };
}

export const parseMerchantApiKeys = (raw: string) => parseApiKeys(raw, 'merchant');
export const parseOperatorApiKeys = (raw: string) => parseApiKeys(raw, 'operator');

/**
 * Pairs of entries, one in each list, that hold the same key (by name only): a key must say whether it is a
 * merchant's or an operator's, or a merchant could decode every payload and an operator act as a merchant.
 */
export function sharedApiKeys(
  merchants: readonly MerchantApiKey[],
  operators: readonly OperatorApiKey[],
): { merchant: string; operator: string }[] {
  return operators.flatMap((o) =>
    merchants.filter((m) => m.key === o.key).map((m) => ({ merchant: m.name, operator: o.name })),
  );
}

/** A development key for the embedded stack: 32 random bytes, base64url (43 characters). */
export function generateApiKey(): string {
  return randomBytes(32).toString('base64url');
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** Digests of the configured keys, computed once per list (the list may be swapped at runtime, as tests do). */
const digestsOf = new WeakMap<readonly ApiKey[], { name: string; digest: Buffer }[]>();

/**
 * The name of the entry whose key was presented (a merchant's or an operator's, by the list given), or undefined. Both sides are hashed with SHA-256 (equal
 * lengths for timingSafeEqual, so the key's length does not leak either) and the presented key is compared with
 * every configured key, with no early exit: the time taken says nothing about which key, or how much of one,
 * matched.
 */
export function identifyApiKey(keys: readonly ApiKey[], presented: string): string | undefined {
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

/** The merchant whose key was presented (identifyApiKey over MERCHANT_API_KEYS). */
export const identifyMerchant = identifyApiKey;
