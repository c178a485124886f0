import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * Decision (docs/bank-interface.md 6.1 leaves the algorithm open; docs/decisions/0005-webhook-url-hash.md): the hash in
 * a finance application's webhookUrl is an HMAC-SHA256 under WEBHOOK_HASH_SECRET, so the receiver checks it from the
 * URL alone, and only we can make one. The URL's key segment is `{merchantId}~{merchantReference}`
 * (src/shared/ids.ts webhookKey) and the hash is keyed over a domain-separated message naming both, so equal
 * references of two merchants never share a URL or a hash.
 */
export function tenantWebhookHash(secret: string, merchantId: string, merchantReference: string): string {
  return createHmac('sha256', keyOf(secret))
    .update(`paylater-webhook-v2\n${merchantId}\n${merchantReference}`, 'utf8')
    .digest('base64url');
}

/**
 * The secret as a key object, made once: an HMAC under a string imports the key anew on every call, and the receiver
 * computes one per webhook. A process knows a handful of secrets (the current and previous WEBHOOK_HASH_SECRET);
 * past that, the oldest is forgotten.
 */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 8;

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    keys.set(secret, key);
  }
  return key;
}

/** The webhookUrl sent to the bank: the hash as the last path segment (the form 6.1 lists second). */
export function financeApplicationWebhookUrl(
  publicBaseUrl: string,
  secret: string,
  merchantReference: string,
  merchantId: string,
): string {
  const base = publicBaseUrl.replace(/\/+$/, '');
  const key = encodeURIComponent(`${merchantId}~${merchantReference}`);
  return `${base}/webhooks/finance-applications/${key}/${tenantWebhookHash(secret, merchantId, merchantReference)}`;
}

/** Constant-time comparison of two secrets of any length (lengths leak, contents do not). */
export function safeEqual(received: string, expected: string): boolean {
  const a = Buffer.from(received, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  if (a.length !== b.length) {
    // Still spend the comparison so the timing does not reveal where a wrong-length value failed.
    timingSafeEqual(b, b);
    return false;
  }
  return timingSafeEqual(a, b);
}

/**
 * True when `received` is the merchant's reference's hash under any of `secrets` (the current WEBHOOK_HASH_SECRET and, during
 * a rotation, WEBHOOK_HASH_SECRET_PREVIOUS). Every secret is checked, in constant time and with no early exit, so
 * the time taken does not say which one matched.
 */
export function isValidWebhookHash(
  secrets: string | readonly (string | undefined)[],
  merchantReference: string,
  received: string,
  merchantId: string,
): boolean {
  let valid = false;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    if (!secret) continue;
    const match = safeEqual(received, tenantWebhookHash(secret, merchantId, merchantReference));
    valid = match || valid;
  }
  return valid;
}
