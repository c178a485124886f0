import { ApplicationFailure } from '@temporalio/common';
import {
  INITIAL_SECRET_GENERATIONS,
  MerchantSecretsFailureType,
  ROTATION_GRACE_BOUNDS,
  type MerchantSecretsInput,
  type MerchantSecretsState,
  type RotateCallbackSecretInput,
  type SecretGeneration,
} from '../../shared/merchant-secrets';

/**
 * The decisions of a merchant's secret rotations, as plain code (no Temporal API, no clock: the workflow passes its
 * time in), unit-tested in test/workflows/merchant-secrets/secrets.test.ts. The state is generations and times only.
 */
export class MerchantSecrets {
  readonly state: MerchantSecretsState;
  /** Rotations made by this run (a count, for tests and logs). */
  version = 0;

  constructor(input: MerchantSecretsInput) {
    const generations = input.generations?.length ? input.generations : INITIAL_SECRET_GENERATIONS;
    this.state = { merchantId: input.merchantId, generations: generations.map((g) => ({ ...g })) };
  }

  /** The update's validator: a grace period within its bounds (a rejected update leaves no trace in the history). */
  validateRotation({ gracePeriodMs }: RotateCallbackSecretInput): void {
    if (
      !Number.isSafeInteger(gracePeriodMs) ||
      gracePeriodMs < ROTATION_GRACE_BOUNDS.min ||
      gracePeriodMs > ROTATION_GRACE_BOUNDS.max
    )
      throw ApplicationFailure.nonRetryable(
        `gracePeriodMs must be a whole number from ${ROTATION_GRACE_BOUNDS.min} to ${ROTATION_GRACE_BOUNDS.max}`,
        MerchantSecretsFailureType.InvalidGracePeriod,
      );
  }

  /**
   * A new generation, signing from `nowMs`; the one it replaces signs until `nowMs + gracePeriodMs`; any older one
   * stops at once, so at most two generations sign at any time (two rotations within a grace period end the first
   * secret early: the merchant asked for two new ones).
   */
  rotate({ gracePeriodMs }: RotateCallbackSecretInput, nowMs: number): MerchantSecretsState {
    const newest = this.newest();
    const replaced: SecretGeneration = { ...newest, retiresAt: new Date(nowMs + gracePeriodMs).toISOString() };
    const next: SecretGeneration = { generation: newest.generation + 1, createdAt: new Date(nowMs).toISOString() };
    this.state.generations = gracePeriodMs > 0 ? [next, replaced] : [next];
    this.version++;
    return this.state;
  }

  /** The next run's input (continue-as-new): the same merchant and generations. */
  continued(): MerchantSecretsInput {
    return { merchantId: this.state.merchantId, generations: this.state.generations.map((g) => ({ ...g })) };
  }

  private newest(): SecretGeneration {
    return this.state.generations.reduce((a, b) => (b.generation > a.generation ? b : a));
  }
}
