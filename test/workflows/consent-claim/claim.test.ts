import { ApplicationFailure } from '@temporalio/common';
import { ConsentClaimFailureType, MAX_CONSENT_CLAIM_CONFLICTS } from '../../../src/shared/consent-claim';
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

  it('keeps the operator that assigned it, and carries it and the conflicts over a move to a new build', () => {
    const claim = new ConsentClaim({ consentId: 'c', merchantId: 'm', assignedBy: 'ops-alice' }, start);
    expect(claim.state).toMatchObject({ merchantId: 'm', assignedBy: 'ops-alice' });
    claim.recordConflict({ merchantId: 'other', at: '2026-01-02T03:05:00.000Z' });
    const next = claim.continued();
    expect(next).toEqual({
      consentId: 'c',
      merchantId: 'm',
      claimedAt: start.toISOString(),
      assignedBy: 'ops-alice',
      conflicts: [
        { merchantId: 'other', firstAt: '2026-01-02T03:05:00.000Z', lastAt: '2026-01-02T03:05:00.000Z', count: 1 },
      ],
    });
    // The next run has the search attribute already (carried by continue-as-new): nothing to set again.
    const moved = new ConsentClaim(next, new Date('2026-02-01T00:00:00.000Z'), 'other');
    expect(moved.state.conflicts).toEqual(next.conflicts);
    expect(moved.conflictToPublish()).toBeUndefined();
  });

  it("records other merchants' refused claims once each, names the first for the search attribute, and stays bounded", () => {
    const claim = new ConsentClaim({ consentId: 'c', merchantId: 'm' }, start);
    expect(claim.conflictToPublish()).toBeUndefined();
    claim.recordConflict({ merchantId: 'm', at: '2026-01-02T03:05:00.000Z' }); // the owner itself: no conflict
    expect(claim.state.conflicts).toBeUndefined();
    claim.recordConflict({ merchantId: 'b', at: '2026-01-02T03:06:00.000Z' });
    claim.recordConflict({ merchantId: 'c', at: '2026-01-02T03:07:00.000Z' });
    claim.recordConflict({ merchantId: 'b', at: '2026-01-02T03:08:00.000Z' });
    claim.recordConflict({ merchantId: 'b', at: '2026-01-02T03:04:59.000Z' }); // signals may arrive out of order
    expect(claim.state.conflicts).toEqual([
      { merchantId: 'b', firstAt: '2026-01-02T03:04:59.000Z', lastAt: '2026-01-02T03:08:00.000Z', count: 3 },
      { merchantId: 'c', firstAt: '2026-01-02T03:07:00.000Z', lastAt: '2026-01-02T03:07:00.000Z', count: 1 },
    ]);
    expect(claim.conflictToPublish()).toBe('b');
    claim.published('b');
    expect(claim.conflictToPublish()).toBeUndefined();
    for (let i = 0; i < MAX_CONSENT_CLAIM_CONFLICTS * 2; i++)
      claim.recordConflict({ merchantId: `x-${i}`, at: '2026-01-02T04:00:00.000Z' });
    expect(claim.state.conflicts).toHaveLength(MAX_CONSENT_CLAIM_CONFLICTS);
  });

  it('keeps the state of a claim without assignment or conflicts as it was', () => {
    const claim = new ConsentClaim({ consentId: 'c', merchantId: 'm' }, start);
    expect(Object.keys(claim.state).sort()).toEqual(['claimedAt', 'consentId', 'merchantId', 'released']);
    expect(claim.continued()).toEqual({ consentId: 'c', merchantId: 'm', claimedAt: start.toISOString() });
  });
});
