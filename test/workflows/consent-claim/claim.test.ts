import { ApplicationFailure } from '@temporalio/common';
import { ConsentClaimFailureType } from '../../../src/shared/consent-claim';
import { ConsentClaim } from '../../../src/workflows/consent-claim/claim';

/** A consent claim's decisions (plain code). */
describe('ConsentClaim', () => {
  const start = new Date('2026-01-02T03:04:05.000Z');

  it("is claimed at the run's start, or at the time carried over a move to a new build", () => {
    expect(new ConsentClaim({ consentId: 'c', merchantId: 'm' }, start).state).toEqual({
      consentId: 'c',
      merchantId: 'm',
      claimedAt: start.toISOString(),
      released: false,
    });
    const moved = new ConsentClaim({ consentId: 'c', merchantId: 'm', claimedAt: '2025-01-01T00:00:00.000Z' }, start);
    expect(moved.state.claimedAt).toBe('2025-01-01T00:00:00.000Z');
    expect(moved.continued()).toEqual({ consentId: 'c', merchantId: 'm', claimedAt: '2025-01-01T00:00:00.000Z' });
  });

  it('lets only the owner release it', () => {
    const claim = new ConsentClaim({ consentId: 'c', merchantId: 'm' }, start);
    let refused: unknown;
    try {
      claim.validateRelease({ merchantId: 'other' });
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ type: ConsentClaimFailureType.NotOwner, nonRetryable: true });
    expect(claim.state.released).toBe(false);
    expect(() => claim.validateRelease({ merchantId: 'm' })).not.toThrow();
    expect(claim.release()).toMatchObject({ released: true });
  });
});
