import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  consentClaimConflictSignal,
  consentClaimQuery,
  releaseConsentClaimUpdate,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../../shared/consent-claim';
import { ConsentClaimConflict } from '../../shared/search-attributes';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING } from '../continue-as-new';
import { ConsentClaim } from './claim';

/**
 * Which merchant owns a consent (src/shared/consent-claim.ts). It records nothing while it waits (no timer), so an
 * open claim costs a few history events for its whole life; the owner's release ends it. Another merchant's refused
 * claim is kept in the state, and the first one named in the ConsentClaimConflict search attribute, for operators.
 * Decisions: claim.ts.
 */
export async function consentClaimWorkflow(input: ConsentClaimInput): Promise<ConsentClaimState> {
  const claim = new ConsentClaim(
    input,
    workflowInfo().startTime,
    workflowInfo().typedSearchAttributes.get(ConsentClaimConflict),
  );
  setHandler(consentClaimQuery, () => claim.state);
  setHandler(releaseConsentClaimUpdate, () => claim.release(), {
    validator: (release: { merchantId: string }) => claim.validateRelease(release),
  });
  setHandler(consentClaimConflictSignal, (conflict) => claim.recordConflict(conflict));
  // The deploy procedure's nudge: an open claim has no timer, so this signal's task is what shows it a new version.
  setHandler(upgradeCheckSignal, () => undefined);
  for (;;) {
    await condition(
      () =>
        claim.state.released ||
        claim.conflictToPublish() !== undefined ||
        workflowInfo().targetWorkerDeploymentVersionChanged ||
        workflowInfo().continueAsNewSuggested,
    );
    const conflict = claim.conflictToPublish();
    if (conflict !== undefined && !claim.state.released) {
      upsertSearchAttributes([{ key: ConsentClaimConflict, value: conflict }]);
      claim.published(conflict);
      continue;
    }
    await condition(allHandlersFinished);
    if (claim.state.released) return claim.state;
    // A new Current Version (or a long history) and no release in progress: the claim moves on (continue-as-new.ts).
    await makeContinueAsNewFunc<typeof consentClaimWorkflow>(CONTINUE_AS_NEW_VERSIONING)(claim.continued());
  }
}
