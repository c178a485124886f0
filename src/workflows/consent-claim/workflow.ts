import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  ConsentClaimFailureType,
  consentClaimQuery,
  releaseConsentClaimUpdate,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../../shared/consent-claim';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING } from '../continue-as-new';

/**
 * Which merchant owns a consent (src/shared/consent-claim.ts). It records nothing while it waits (no timer), so an
 * open claim costs a few history events for its whole life; the owner's release ends it.
 */
export async function consentClaimWorkflow(input: ConsentClaimInput): Promise<ConsentClaimState> {
  const state: ConsentClaimState = {
    consentId: input.consentId,
    merchantId: input.merchantId,
    // Carried across continue-as-new (a move to a new build); the first run's start otherwise.
    claimedAt: input.claimedAt ?? workflowInfo().startTime.toISOString(),
    released: false,
  };
  setHandler(consentClaimQuery, () => state);
  setHandler(
    releaseConsentClaimUpdate,
    () => {
      state.released = true;
      return state;
    },
    {
      validator: ({ merchantId }) => {
        if (merchantId !== state.merchantId)
          throw ApplicationFailure.nonRetryable('not the owner of this consent', ConsentClaimFailureType.NotOwner);
      },
    },
  );
  // The deploy procedure's nudge: an open claim has no timer, so this signal's task is what shows it a new version.
  setHandler(upgradeCheckSignal, () => undefined);
  for (;;) {
    await condition(() => state.released || workflowInfo().targetWorkerDeploymentVersionChanged);
    await condition(allHandlersFinished);
    if (state.released) return state;
    // A new Current Version and no release in progress: the claim moves to it (continue-as-new.ts).
    await makeContinueAsNewFunc<typeof consentClaimWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
      consentId: input.consentId,
      merchantId: input.merchantId,
      claimedAt: state.claimedAt,
    });
  }
}
