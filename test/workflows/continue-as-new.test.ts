import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason, type RunInfo } from '../../src/workflows/continue-as-new';

const quiet: RunInfo = {
  targetWorkerDeploymentVersionChanged: false,
  continueAsNewSuggested: false,
  historyLength: 10,
};

describe('continueAsNewReason: when a long-lived run continues as new', () => {
  it('goes on when nothing asks for it', () => {
    expect(continueAsNewReason(quiet)).toBeUndefined();
    expect(continueAsNewReason(quiet, 11)).toBeUndefined();
  });
  it('moves to a new current version first, whatever else holds', () => {
    expect(continueAsNewReason({ ...quiet, targetWorkerDeploymentVersionChanged: true })).toBe('new-version');
    expect(
      continueAsNewReason(
        { targetWorkerDeploymentVersionChanged: true, continueAsNewSuggested: true, historyLength: 99 },
        5,
      ),
    ).toBe('new-version');
  });
  it("follows the server's suggestion, then the workflow's own bound on events", () => {
    expect(continueAsNewReason({ ...quiet, continueAsNewSuggested: true }, 5)).toBe('suggested');
    expect(continueAsNewReason(quiet, 10)).toBe('history-length');
  });
  it('lands every continue-as-new on the target version', () => {
    expect(CONTINUE_AS_NEW_VERSIONING).toEqual({ initialVersioningBehavior: 'AUTO_UPGRADE' });
  });
});
