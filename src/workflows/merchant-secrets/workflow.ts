import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import {
  MERCHANT_SECRETS_MEMO,
  merchantSecretsQuery,
  rotateCallbackSecretUpdate,
  type MerchantSecretsInput,
  type RotateCallbackSecretInput,
} from '../../shared/merchant-secrets';
import { upgradeCheckSignal } from '../../shared/versioning';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';
import { MerchantSecrets } from './secrets';

/** Workflow time (deterministic in the sandbox); Date.now is linted out of workflow code. */
const now = (): number => new Date().getTime();

/**
 * One merchant's callback signing secret rotations (src/shared/merchant-secrets.ts): generation numbers and times,
 * never a secret. Started by the merchant's first rotation; records nothing while it waits (no timer), so it costs a
 * few events per rotation. Every change is published in the memo, which the API and the workers read with one
 * describe (no worker needed). Decisions: secrets.ts.
 */
export async function merchantSecretsWorkflow(input: MerchantSecretsInput): Promise<void> {
  const secrets = new MerchantSecrets(input);
  const publish = () => upsertMemo({ [MERCHANT_SECRETS_MEMO]: secrets.state });
  setHandler(merchantSecretsQuery, () => secrets.state);
  // The memo is the record readers see: written as the handler records the rotation, so it is always the command
  // before the update's answer in the same task, whatever interceptors run around the handler (a write from the
  // body would land before or after the answer depending on them, which replay would not forgive).
  setHandler(
    rotateCallbackSecretUpdate,
    (rotation: RotateCallbackSecretInput) => {
      const state = secrets.rotate(rotation, now());
      publish();
      return state;
    },
    { validator: (rotation: RotateCallbackSecretInput) => secrets.validateRotation(rotation) },
  );
  // The deploy procedure's nudge: the run has no timer, so this signal's task is what shows it a new version.
  setHandler(upgradeCheckSignal, () => undefined);
  // The generations this run starts from (a first rotation's, or those carried over), before anything else.
  publish();
  await condition(() => continueAsNewReason(workflowInfo()) !== undefined);
  await condition(allHandlersFinished);
  // A new Current Version, or a long history: the same generations in a new run (continue-as-new.ts).
  await makeContinueAsNewFunc<typeof merchantSecretsWorkflow>(CONTINUE_AS_NEW_VERSIONING)(secrets.continued());
}
