import { consentRefreshWorkflowType, lateAccountEventsWorkflowType } from '../../src/shared/consent-refresh';
import { transactionEventsWorkflowType } from '../../src/shared/transaction-events';
import { financeApplicationWorkflowType } from '../../src/shared/finance-application';
import { callbackRedeliveryWorkflowType } from '../../src/shared/merchant-callbacks';
import { merchantSecretsWorkflowType } from '../../src/shared/merchant-secrets';
import * as workflows from '../../src/workflows';

/**
 * The client, the receivers and the parent workflow start workflows by these names; Temporal knows a workflow
 * type by the exported function's name. A rename on one side only would start workflows no worker runs.
 */
describe('workflow type names', () => {
  it.each([
    [financeApplicationWorkflowType, workflows.financeApplicationWorkflow],
    [consentRefreshWorkflowType, workflows.consentRefreshWorkflow],
    [transactionEventsWorkflowType, workflows.transactionEventsWorkflow],
    [lateAccountEventsWorkflowType, workflows.lateAccountEventsWorkflow],
    [callbackRedeliveryWorkflowType, workflows.callbackRedeliveryWorkflow],
    [merchantSecretsWorkflowType, workflows.merchantSecretsWorkflow],
  ])('%s is the name of an exported workflow function', (name, fn) => {
    expect(fn.name).toBe(name);
  });
});
