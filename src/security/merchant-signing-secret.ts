import { createHmac } from 'node:crypto';
import { signingGenerations, type SecretGeneration } from '../shared/merchant-secrets';

/**
 * A callback signing secret per merchant, derived rather than stored (docs/decisions/0045-derived-callback-signing-secrets.md):
 *
 *   secret(master, merchant, generation) =
 *     "whsec_" + base64(HMAC-SHA256(master, "paylater callback signing v1\0" + merchant + "\0" + generation))
 *
 * where `master` is the UTF-8 bytes of an entry of CALLBACK_SIGNING_MASTER_SECRETS and `generation` the decimal number
 * of the merchant's rotation (1 until its first). Two merchants never get the same secret, a rotation is a new
 * generation, and nothing secret is kept anywhere but in the master: Temporal holds only generation numbers and times
 * (src/shared/merchant-secrets.ts). The operator can compute any merchant's secret without the service:
 * `printf 'paylater callback signing v1\0%s\0%s' shop-a 1 | openssl dgst -sha256 -hmac "$MASTER" -binary | base64`.
 */

export const CALLBACK_SIGNING_MASTER_SECRETS = 'CALLBACK_SIGNING_MASTER_SECRETS';

/** The label that separates these HMACs from any other use of the master (and versions the derivation). */
export const DERIVATION_LABEL = 'paylater callback signing v1';

/** A master shorter than this is refused at start-up (it keys an HMAC). */
export const MIN_MASTER_LENGTH = 32;

/**
 * The embedded stack's master when neither CALLBACK_SIGNING_MASTER_SECRETS nor CALLBACK_SIGNING_SECRETS is set (never
 * with a real bank): fixed and public, so a developer's local merchants keep their secrets across restarts, each its
 * own. Start-up says it is in use.
 */
export const DEVELOPMENT_SIGNING_MASTER_SECRET = 'dev-only-master-of-the-merchant-callback-signing-secrets';

/** Why a configured master is unusable (never echoing it), or undefined when it is fine. */
export function masterSecretProblem(master: string): string | undefined {
  if (master.length < MIN_MASTER_LENGTH)
    return `each master must be at least ${MIN_MASTER_LENGTH} characters (it keys an HMAC; openssl rand -base64 32)`;
  if (!/^[\x21-\x7e]+$/.test(master)) return 'each master must be visible ASCII characters without spaces';
  return undefined;
}

/** The merchant's signing secret of one generation under one master (a Standard Webhooks `whsec_` secret). */
export function deriveCallbackSigningSecret(master: string, merchantId: string, generation: number): string {
  if (!Number.isSafeInteger(generation) || generation < 1)
    throw new RangeError('generation must be a whole number ≥ 1');
  const mac = createHmac('sha256', Buffer.from(master, 'utf8'))
    .update(`${DERIVATION_LABEL}\0${merchantId}\0${generation}`, 'utf8')
    .digest();
  return `whsec_${mac.toString('base64')}`;
}

/** How a merchant's callbacks are signed (src/config/merchants.ts resolves it per merchant). */
export interface CallbackSigningKeys {
  /** Explicit secrets (MERCHANTS_FILE, or CALLBACK_SIGNING_SECRETS in a one-merchant deployment): every one signs. */
  signingSecrets: readonly string[];
  /** Present: the secrets are derived from these masters (the first is the one merchants are shown); every one signs. */
  signingMasters?: readonly string[];
}

/** True when the merchant's secrets are derived (and so rotated by the merchant), false when they are set by the operator. */
export function derivesSecrets(keys: CallbackSigningKeys): boolean {
  return keys.signingSecrets.length === 0 && (keys.signingMasters?.length ?? 0) > 0;
}

/**
 * Every secret that signs the merchant's callbacks at `nowMs`: the explicit ones, or, derived, one per master and per
 * generation still signing (the newest, and the previous one during its grace period).
 */
export function callbackSigningSecretsAt(
  keys: CallbackSigningKeys,
  merchantId: string,
  generations: readonly SecretGeneration[],
  nowMs: number,
): string[] {
  if (!derivesSecrets(keys)) return [...keys.signingSecrets];
  const live = signingGenerations(generations, nowMs);
  return keys.signingMasters!.flatMap((master) =>
    live.map((g) => deriveCallbackSigningSecret(master, merchantId, g.generation)),
  );
}

/** One secret as its merchant is shown it (GET /merchant/callback-signing-secret, the console). */
export interface ShownSigningSecret {
  secret: string;
  /** Its generation; null for a secret the operator sets (MERCHANTS_FILE, CALLBACK_SIGNING_SECRETS). */
  generation: number | null;
  /** When the rotation that made it happened (ISO); null for generation 1 and operator-set secrets. */
  createdAt: string | null;
  /** When it stops signing (ISO): the end of its grace period; null while it is the newest. */
  retiresAt: string | null;
}

/**
 * The secrets that sign the merchant's callbacks at `nowMs`, newest first, as the merchant sees them: the explicit
 * ones, or those derived from the first master (the secrets of older masters still sign during a master's rotation,
 * but no merchant needs them).
 */
export function shownSigningSecrets(
  keys: CallbackSigningKeys,
  merchantId: string,
  generations: readonly SecretGeneration[],
  nowMs: number,
): ShownSigningSecret[] {
  if (!derivesSecrets(keys))
    return keys.signingSecrets.map((secret) => ({ secret, generation: null, createdAt: null, retiresAt: null }));
  return signingGenerations(generations, nowMs).map((g) => ({
    secret: deriveCallbackSigningSecret(keys.signingMasters![0]!, merchantId, g.generation),
    generation: g.generation,
    createdAt: g.createdAt ?? null,
    retiresAt: g.retiresAt ?? null,
  }));
}
