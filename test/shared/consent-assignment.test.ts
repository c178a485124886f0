import { consentAssignmentFor } from '../../src/shared/consent-assignment';

/** CONSENT_ASSIGNMENT's rule (docs/decisions/0046-consents-assigned-by-an-operator.md). */
describe('consentAssignmentFor', () => {
  it('lets the one merchant of a deployment claim its consents, and leaves them to operators once there are more', () => {
    expect(consentAssignmentFor('auto', 1)).toBe('merchant');
    expect(consentAssignmentFor('auto', 2)).toBe('operator');
    expect(consentAssignmentFor('auto', 50)).toBe('operator');
    // No merchant at all (a worker-only configuration): nobody may claim.
    expect(consentAssignmentFor('auto', 0)).toBe('operator');
  });

  it('keeps a rule that is set, whatever the number of merchants', () => {
    expect(consentAssignmentFor('operator', 1)).toBe('operator');
    expect(consentAssignmentFor('merchant', 3)).toBe('merchant');
  });
});
