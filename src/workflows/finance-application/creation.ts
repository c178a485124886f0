import {
  ApplicationFailure,
  condition,
  isCancellation,
  log,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  FinanceApplicationFailureType,
  type FinanceApplicationInput,
  type FinanceApplicationStarted,
} from '../../shared/finance-application';
import { FinanceApplicationId } from '../../shared/search-attributes';
import { workflowMetrics } from '../metrics';
import { bank, checkCallbackUrl } from './proxies';
import { callbackCheckFailed, callbackRefused, createFailure, failureType } from './failures';
import type { Reporter } from './reporting';
import type { FinanceApplication } from './state';

/**
 * The application's creation at the bank, and the start update that answers with it (update-with-start:
 * samples-typescript `early-return`). A callback URL outside the allow-list fails the run before the bank is called.
 */
export class Creation {
  /** Why the application was not created: the start update fails with it. */
  private failure: ApplicationFailure | undefined;

  constructor(
    private readonly app: FinanceApplication,
    private readonly report: Reporter,
    private readonly input: FinanceApplicationInput,
  ) {}

  /** The start update's handler: the bank's create response once there is one, or the reason there is none. */
  async started(requestId: string): Promise<FinanceApplicationStarted> {
    const { state } = this.app;
    await condition(() => state.bank !== undefined || this.failure !== undefined);
    if (!state.bank || !state.financeApplicationId) {
      throw (
        this.failure ??
        ApplicationFailure.nonRetryable('application not created', FinanceApplicationFailureType.CreateFailed)
      );
    }
    return {
      merchantReference: this.input.merchantReference,
      workflowId: workflowInfo().workflowId,
      financeApplicationId: state.financeApplicationId,
      bank: state.bank,
      created: this.input.startRequestId !== undefined && requestId === this.input.startRequestId,
    };
  }

  /**
   * Why the worker refuses the callback URL (a non-retryable failure to end the run with, also the start update's),
   * or undefined.
   */
  async callbackRefusal(url: string): Promise<ApplicationFailure | undefined> {
    const { merchantId, merchantReference } = this.input;
    let verdict;
    try {
      verdict = await checkCallbackUrl({ url, merchantId });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return (this.failure = callbackCheckFailed(err, merchantReference));
    }
    if (verdict.allowed) return undefined;
    log.error('Merchant callback URL not allowed: the application is not created', {
      merchantReference,
      callbackOrigin: verdict.origin,
      reason: verdict.reason,
    });
    return (this.failure = callbackRefused(verdict, merchantReference));
  }

  /** Creates the application at the bank; a failure ends the run (thrown, and the start update's answer). */
  async create(): Promise<void> {
    const { merchantId, merchantReference, application } = this.input;
    try {
      const created = await bank('Create the application at the bank').createApplication({
        merchantId,
        merchantReference,
        application,
      });
      const change = this.app.created(created, new Date());
      workflowMetrics.applicationStarted();
      upsertSearchAttributes([{ key: FinanceApplicationId, value: created.financeApplicationId }]);
      log.info('Finance application created', this.report.ids());
      if (change) this.report.changed(change);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const { failure, rejected } = createFailure(err, merchantReference);
      this.failure = failure;
      workflowMetrics.applicationFinished(rejected ? 'create_rejected' : 'create_failed', 'none');
      log.error('Finance application not created', { merchantReference, bankFailureType: failureType(err) });
      throw failure;
    }
  }
}

/** The start update's validator: a request id is required (it tells the call that created the application). */
export function validateStartRequest(arg: { requestId?: unknown } | undefined): void {
  if (typeof arg?.requestId !== 'string') {
    throw ApplicationFailure.nonRetryable('requestId must be a string', FinanceApplicationFailureType.InvalidUpdate);
  }
}
