import { ApplicationFailure } from '@temporalio/common';
import { MerchantSecretsFailureType, ROTATION_GRACE_BOUNDS } from '../../../src/shared/merchant-secrets';
import { MerchantSecrets } from '../../../src/workflows/merchant-secrets/secrets';

/** A merchant's secret rotations (plain code; src/workflows/merchant-secrets/secrets.ts). */
describe('MerchantSecrets', () => {
  const t0 = Date.parse('2026-05-01T12:00:00.000Z');
  const iso = (ms: number) => new Date(ms).toISOString();

  it('starts at generation 1, or at the generations carried over', () => {
    expect(new MerchantSecrets({ merchantId: 'm' }).state).toEqual({
      merchantId: 'm',
      generations: [{ generation: 1 }],
    });
    const carried = [{ generation: 5, createdAt: iso(t0) }];
    const moved = new MerchantSecrets({ merchantId: 'm', generations: carried });
    expect(moved.state.generations).toEqual(carried);
    expect(moved.continued()).toEqual({ merchantId: 'm', generations: carried });
  });

  it('adds a generation that signs at once and lets the replaced one sign for the grace period', () => {
    const secrets = new MerchantSecrets({ merchantId: 'm' });
    expect(secrets.rotate({ gracePeriodMs: 3_600_000 }, t0).generations).toEqual([
      { generation: 2, createdAt: iso(t0) },
      { generation: 1, retiresAt: iso(t0 + 3_600_000) },
    ]);
    expect(secrets.version).toBe(1);
  });

  it('ends an older generation at once on a second rotation: at most two sign', () => {
    const secrets = new MerchantSecrets({ merchantId: 'm' });
    secrets.rotate({ gracePeriodMs: 3_600_000 }, t0);
    expect(secrets.rotate({ gracePeriodMs: 60_000 }, t0 + 1_000).generations).toEqual([
      { generation: 3, createdAt: iso(t0 + 1_000) },
      { generation: 2, createdAt: iso(t0), retiresAt: iso(t0 + 61_000) },
    ]);
  });

  it('drops the replaced generation at once with no grace period (a leaked secret)', () => {
    const secrets = new MerchantSecrets({ merchantId: 'm', generations: [{ generation: 7 }] });
    expect(secrets.rotate({ gracePeriodMs: 0 }, t0).generations).toEqual([{ generation: 8, createdAt: iso(t0) }]);
  });

  it('refuses a grace period out of bounds, changing nothing', () => {
    const secrets = new MerchantSecrets({ merchantId: 'm' });
    for (const gracePeriodMs of [-1, 1.5, ROTATION_GRACE_BOUNDS.max + 1, Number.NaN]) {
      let refused: unknown;
      try {
        secrets.validateRotation({ gracePeriodMs });
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(ApplicationFailure);
      expect(refused).toMatchObject({ type: MerchantSecretsFailureType.InvalidGracePeriod, nonRetryable: true });
    }
    expect(() => secrets.validateRotation({ gracePeriodMs: ROTATION_GRACE_BOUNDS.max })).not.toThrow();
    expect(secrets.state.generations).toEqual([{ generation: 1 }]);
  });
});
