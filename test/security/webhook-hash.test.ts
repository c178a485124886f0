/**
 * The finance webhook's URL hash (src/security/webhook-hash.ts): an HMAC-SHA256 under WEBHOOK_HASH_SECRET over a
 * message naming the merchant and the reference. The key object made once per secret gives the same hash as an HMAC
 * under the secret's string, for more secrets than are kept, and a rotation accepts either secret's hash.
 */
import { createHmac } from 'node:crypto';
import { isValidWebhookHash, tenantWebhookHash } from '../../src/security/webhook-hash';

const reference = (secret: string, merchantId: string, ref: string) =>
  createHmac('sha256', secret).update(`paylater-webhook-v2\n${merchantId}\n${ref}`, 'utf8').digest('base64url');

describe('the webhook URL hash', () => {
  it('is the HMAC under the secret, for every secret in turn and again (more than the keys kept)', () => {
    const secrets = Array.from({ length: 12 }, (_, i) => `secret-${i}-0123456789abcdef0123456789abcdef`);
    for (const round of [1, 2])
      for (const secret of secrets)
        expect(tenantWebhookHash(secret, 'shop-a', `order-${round}`)).toBe(
          reference(secret, 'shop-a', `order-${round}`),
        );
    // Non-ASCII secrets are keyed as their UTF-8 bytes, as the string form keys them.
    expect(tenantWebhookHash('sécret-ü-🔑', 'shop-a', 'o')).toBe(reference('sécret-ü-🔑', 'shop-a', 'o'));
  });

  it('accepts the current or the previous secret, and neither another merchant nor another reference', () => {
    const [current, previous] = ['current-secret-0123456789abcdef', 'previous-secret-0123456789abcdef'];
    const hash = tenantWebhookHash(previous, 'shop-a', 'order-1');
    expect(isValidWebhookHash([current, previous], 'order-1', hash, 'shop-a')).toBe(true);
    expect(isValidWebhookHash([current, undefined], 'order-1', hash, 'shop-a')).toBe(false);
    expect(isValidWebhookHash([current, previous], 'order-1', hash, 'shop-b')).toBe(false);
    expect(isValidWebhookHash([current, previous], 'order-2', hash, 'shop-a')).toBe(false);
  });
});
