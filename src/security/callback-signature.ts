import { Webhook } from 'standardwebhooks';

/**
 * Merchant callbacks are signed as the Standard Webhooks specification says (https://www.standardwebhooks.com),
 * with its reference library, so a merchant verifies them with the same library (`Webhook#verify`):
 * - `webhook-id`: the event's idempotency key, stable across retries (also sent as `idempotency-key`);
 * - `webhook-timestamp`: seconds since the epoch, taken at each delivery attempt;
 * - `webhook-signature`: `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, one per configured secret,
 *   space-separated, so during a rotation a merchant holding either the old or the new secret verifies.
 * Secrets are `whsec_<base64 of 24 to 64 random bytes>`: each merchant's own, derived from CALLBACK_SIGNING_MASTER_SECRETS
 * (./merchant-signing-secret.ts), or set by the operator (MERCHANTS_FILE, CALLBACK_SIGNING_SECRETS). They never reach
 * a log.
 */

export const CALLBACK_SIGNING_SECRETS = 'CALLBACK_SIGNING_SECRETS';

const SECRET_PREFIX = 'whsec_';
const SECRET_PATTERN = /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** The specification's bounds on the key (decoded). */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/** Why a configured secret is unusable (the message never contains the secret), or undefined when it is fine. */
export function signingSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(SECRET_PREFIX)) return `each secret must start with ${SECRET_PREFIX}`;
  if (!SECRET_PATTERN.test(secret)) return `each secret must be ${SECRET_PREFIX} followed by padded standard base64`;
  const bytes = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64').length;
  if (bytes < MIN_KEY_BYTES || bytes > MAX_KEY_BYTES)
    return `each secret must decode to ${MIN_KEY_BYTES}-${MAX_KEY_BYTES} bytes (got ${bytes})`;
  return undefined;
}

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** Signs callback bodies with every configured secret. Holds the keys; has no other state. */
export class CallbackSigner {
  readonly #keys: Webhook[];

  constructor(secrets: readonly string[]) {
    this.#keys = secrets.map((secret) => new Webhook(secret));
  }

  /** False when no secret is configured: nothing may be sent then (never an unsigned callback). */
  get canSign(): boolean {
    return this.#keys.length > 0;
  }

  /** The three headers for `body` (the exact bytes sent) as of `at` (a delivery attempt's time). */
  sign(id: string, body: string, at: Date): SignatureHeaders {
    if (!this.canSign) throw new Error(`no ${CALLBACK_SIGNING_SECRETS} configured`);
    // The header carries whole seconds: sign exactly that second.
    const seconds = Math.floor(at.getTime() / 1000);
    const timestamp = new Date(seconds * 1000);
    return {
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': this.#keys.map((key) => key.sign(id, timestamp, body)).join(' '),
    };
  }

  /** Never print the keys (console.log, util.inspect, a logger serialising the object). */
  toJSON(): string {
    return `CallbackSigner(${this.#keys.length} secret(s))`;
  }
}
