import { allHandlersFinished, condition, makeContinueAsNewFunc, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  consentClaimQuery,
  releaseConsentClaimUpdate,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../../shared/consent-claim';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING } from '../continue-as-new';
import { ConsentClaim } from './claim';

/**
 * Which merchant owns a consent (src/shared/consent-claim.ts). It records nothing while it waits (no timer), so an
 * open claim costs a few history events for its whole life; the owner's release ends it. Decisions: claim.ts.
 */
export async function consentClaimWorkflow(input: ConsentClaimInput): Promise<ConsentClaimState> {
  const claim = new ConsentClaim(input, workflowInfo().startTime);
  setHandler(consentClaimQuery, () => claim.state);
  setHandler(releaseConsentClaimUpdate, () => claim.release(), {
    validator: (release: { merchantId: string }) => claim.validateRelease(release),
  });
  // The deploy procedure's nudge: an open claim has no timer, so this signal's task is what shows it a new version.
  setHandler(upgradeCheckSignal, () => undefined);
  for (;;) {
    await condition(() => claim.state.released || workflowInfo().targetWorkerDeploymentVersionChanged);
    await condition(allHandlersFinished);
    if (claim.state.released) return claim.state;
    // A new Current Version and no release in progress: the claim moves to it (continue-as-new.ts).
    await makeContinueAsNewFunc<typeof consentClaimWorkflow>(CONTINUE_AS_NEW_VERSIONING)(claim.continued());
  }
}
