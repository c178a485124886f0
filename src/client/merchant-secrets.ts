import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { merchantSecretsWorkflowId } from '../shared/ids';
import {
  generationsOf,
  MERCHANT_SECRETS_MEMO,
  merchantSecretsWorkflowType,
  rotateCallbackSecretUpdate,
  type MerchantSecretsInput,
  type MerchantSecretsState,
  type SecretGeneration,
} from '../shared/merchant-secrets';
import { MerchantId } from '../shared/search-attributes';
import type { merchantSecretsWorkflow } from '../workflows/merchant-secrets/workflow';
import { merchantScope, type MerchantScope } from './merchant-scope';
import { isClosedRunError } from './status-waits';

/**
 * A merchant's callback signing secret generations (src/shared/merchant-secrets.ts), shared by every API process and
 * worker through Temporal: read with one describe of the merchant's merchantSecretsWorkflow (its memo; no worker
 * needed), changed by an update-with-start of it. The secrets themselves are derived where they are used
 * (src/security/merchant-signing-secret.ts) and never reach Temporal.
 */

/** The merchant's generations, newest first: generation 1 alone when it never rotated. */
export async function readCallbackSecretGenerations(
  client: Client,
  merchant: MerchantScope | string,
): Promise<SecretGeneration[]> {
  const { merchantId } = merchantScope(merchant);
  try {
    const description = await client.workflow.getHandle(merchantSecretsWorkflowId(merchantId)).describe();
    // A closed run (terminated by an operator) still says which generations are current: its last memo.
    return generationsOf(description.memo?.[MERCHANT_SECRETS_MEMO]);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return generationsOf(undefined);
    throw err;
  }
}

/**
 * Rotates the merchant's secret: a new generation signs at once, the previous one for `gracePeriodMs` more. Starts the
 * merchant's workflow at its first rotation (from the generations last published, so a run closed by an operator
 * never brings an old secret back). Returns the state after the rotation.
 */
export async function rotateCallbackSigningSecret(
  client: Client,
  merchant: MerchantScope | string,
  options: { gracePeriodMs: number; taskQueue: string },
): Promise<MerchantSecretsState> {
  const { merchantId } = merchantScope(merchant);
  const input: MerchantSecretsInput = {
    merchantId,
    generations: await readCallbackSecretGenerations(client, merchantId),
  };
  const rotate = () =>
    client.workflow.executeUpdateWithStart(rotateCallbackSecretUpdate, {
      args: [{ gracePeriodMs: options.gracePeriodMs }],
      startWorkflowOperation: new WithStartWorkflowOperation<typeof merchantSecretsWorkflow>(
        merchantSecretsWorkflowType,
        {
          workflowId: merchantSecretsWorkflowId(merchantId),
          taskQueue: options.taskQueue,
          args: [input],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          typedSearchAttributes: [{ key: MerchantId, value: merchantId }],
          staticSummary: `Callback signing secret rotations of ${merchantId}`,
        },
      ),
    });
  try {
    return await rotate();
  } catch (err) {
    // The run continued as new (a new build, a long history) under the update: the next run takes it.
    if (!isClosedRunError(err)) throw err;
    return rotate();
  }
}
