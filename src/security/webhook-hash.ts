import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Decision (bank-interface.md 6.1 leaves the algorithm open): the hash in a finance application's
 * webhookUrl is base64url(HMAC-SHA256(WEBHOOK_HASH_SECRET, merchantReference)). It depends only on the
 * reference, so the receiver checks it from the URL alone, and only we can make one.
 */
export function webhookHash(secret: string, merchantReference: string): string {
  return createHmac('sha256', secret).update(merchantReference, 'utf8').digest('base64url');
}

/** The webhookUrl sent to the bank: the hash as the last path segment (the form 6.1 lists second). */
export function financeApplicationWebhookUrl(publicBaseUrl: string, secret: string, merchantReference: string): string {
  const base = publicBaseUrl.replace(/\/+$/, '');
  const ref = encodeURIComponent(merchantReference);
  return `${base}/webhooks/finance-applications/${ref}/${webhookHash(secret, merchantReference)}`;
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
 * True when `received` is the reference's hash under any of `secrets` (the current WEBHOOK_HASH_SECRET and, during
 * a rotation, WEBHOOK_HASH_SECRET_PREVIOUS). Every secret is checked, in constant time and with no early exit, so
 * the time taken does not say which one matched.
 */
export function isValidWebhookHash(
  secrets: string | readonly (string | undefined)[],
  merchantReference: string,
  received: string,
): boolean {
  let valid = false;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    if (!secret) continue;
    const match = safeEqual(received, webhookHash(secret, merchantReference));
    valid = match || valid;
  }
  return valid;
}
