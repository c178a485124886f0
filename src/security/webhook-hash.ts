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

export function isValidWebhookHash(secret: string, merchantReference: string, received: string): boolean {
  return safeEqual(received, webhookHash(secret, merchantReference));
}
