import { defineQuery, defineUpdate } from '@temporalio/workflow';

/**
 * The rotation state of a merchant's callback signing secret (docs/decisions/0045-derived-callback-signing-secrets.md).
 * A derived secret is a function of the master, the merchant and a generation number
 * (src/security/merchant-signing-secret.ts), so the state shared by every API process and worker is only the
 * generations and their times, never a secret: one small workflow per merchant (merchantSecretsWorkflowId), started
 * by its first rotation, holds them and publishes them in its memo (MERCHANT_SECRETS_MEMO), read with one describe.
 * A merchant that never rotated has no workflow: generation 1 (INITIAL_SECRET_GENERATIONS).
 */
export const merchantSecretsWorkflowType = 'merchantSecretsWorkflow';

export interface SecretGeneration {
  /** 1 for the secret a merchant starts with; one more at each rotation. */
  generation: number;
  /** ISO time of the rotation that made it; absent for generation 1, which has always been there. */
  createdAt?: string;
  /** ISO time from which it no longer signs (the rotation that replaced it, plus its grace period); absent while newest. */
  retiresAt?: string;
}

/** Newest first: the newest generation, and the one it replaced while that one is in its grace period. */
export interface MerchantSecretsState {
  merchantId: string;
  generations: SecretGeneration[];
}

export interface MerchantSecretsInput {
  merchantId: string;
  /** The generations carried over (continue-as-new, or a run started again after the last one was closed). */
  generations?: SecretGeneration[];
}

export interface RotateCallbackSecretInput {
  /** How long the replaced secret still signs; 0: not at all (a leaked secret). */
  gracePeriodMs: number;
}

/** Rotates the merchant's secret: a new generation signs at once, the previous one until its grace period ends. */
export const rotateCallbackSecretUpdate = defineUpdate<MerchantSecretsState, [RotateCallbackSecretInput]>(
  'rotateCallbackSigningSecret',
);

export const merchantSecretsQuery = defineQuery<MerchantSecretsState>('merchantSecrets');

/** The memo key under which the workflow publishes its state (generations and times only). */
export const MERCHANT_SECRETS_MEMO = 'callbackSecretGenerations';

/** The state of a merchant that never rotated. */
export const INITIAL_SECRET_GENERATIONS: readonly SecretGeneration[] = [{ generation: 1 }];

/** The grace period of a rotation unless the merchant asks for another (Svix keeps the old secret for 24 hours). */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 3_600_000;
/** Bounds of a rotation's grace period. */
export const ROTATION_GRACE_BOUNDS = { min: 0, max: 7 * 24 * 3_600_000 } as const;

/** Failure types of the rotation update. */
export const MerchantSecretsFailureType = {
  /** A grace period outside ROTATION_GRACE_BOUNDS (the facade refuses it first). */
  InvalidGracePeriod: 'MerchantSecretsInvalidGracePeriod',
} as const;

/**
 * The generations that sign at `nowMs`, newest first: those without a retirement time, or retiring later. The newest
 * always signs, whatever the clocks say.
 */
export function signingGenerations(generations: readonly SecretGeneration[], nowMs: number): SecretGeneration[] {
  const sorted = [...generations].sort((a, b) => b.generation - a.generation);
  return sorted.filter((g, i) => i === 0 || g.retiresAt === undefined || Date.parse(g.retiresAt) > nowMs);
}

/** A memo's value as generations, or the initial ones when it holds none (no workflow, or one that never rotated). */
export function generationsOf(memo: unknown): SecretGeneration[] {
  const generations: unknown = (memo as { generations?: unknown } | null | undefined)?.generations;
  const valid = Array.isArray(generations)
    ? (generations as unknown[]).filter(
        (g): g is SecretGeneration =>
          typeof g === 'object' && g !== null && Number.isSafeInteger((g as { generation?: unknown }).generation),
      )
    : [];
  return valid.length > 0 ? valid : [...INITIAL_SECRET_GENERATIONS];
}
