import { ApplicationFailure, allHandlersFinished, condition, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  ConsentClaimFailureType,
  consentClaimQuery,
  releaseConsentClaimUpdate,
  type ConsentClaimInput,
  type ConsentClaimState,
} from '../shared/consent-claim';

/**
 * Which merchant owns a consent (src/shared/consent-claim.ts). It records nothing while it waits (no timer), so an
 * open claim costs a few history events for its whole life; the owner's release ends it.
 */
export async function consentClaimWorkflow(input: ConsentClaimInput): Promise<ConsentClaimState> {
  const state: ConsentClaimState = {
    consentId: input.consentId,
    merchantId: input.merchantId,
    claimedAt: workflowInfo().startTime.toISOString(),
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
  await condition(() => state.released);
  await condition(allHandlersFinished);
  return state;
}
