import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  CallbackLedger,
  callbackReportSignal,
  undeliveredCallbacksQuery,
  type CallbackLedgerInput,
} from '../../shared/undelivered-callbacks';
import { CONTINUE_AS_NEW_VERSIONING, continueAsNewReason } from '../continue-as-new';

/** Events per run before it continues as new (each report is one signal event). */
const EVENTS_PER_RUN = 4_000;
/** An empty ledger with no report for this long ends; the next report starts it again. */
const IDLE_END = '1 day';

/**
 * One merchant's callbacks not delivered (docs/decisions/0049-undelivered-callbacks-ledger.md): the notifyMerchant
 * activity reports a callback's first failure, its give-up at the end of the retry window, and its delivery after
 * either, by signal-with-start; the merchant's list and the bulk resend read it with one query per page. Handlers
 * only record; the body waits, continues as new with the entries, and ends once empty and idle.
 */
export async function callbackLedgerWorkflow(input: CallbackLedgerInput): Promise<void> {
  const ledger = new CallbackLedger(input.carried);
  let reports = 0;
  setHandler(callbackReportSignal, (report) => {
    ledger.record(report);
    reports++;
  });
  setHandler(undeliveredCallbacksQuery, (request) => ledger.page(request));

  for (;;) {
    const seen = reports;
    const moved = await condition(
      () => reports !== seen || continueAsNewReason(workflowInfo(), EVENTS_PER_RUN) !== undefined,
      IDLE_END,
    );
    setCurrentDetails(`**${ledger.size}** undelivered callback(s) of merchant ${input.merchantId}`);
    if (!moved && ledger.size === 0) break;
    if (continueAsNewReason(workflowInfo(), EVENTS_PER_RUN) !== undefined) {
      await condition(allHandlersFinished);
      return await makeContinueAsNewFunc<typeof callbackLedgerWorkflow>(CONTINUE_AS_NEW_VERSIONING)({
        merchantId: input.merchantId,
        carried: ledger.snapshot(),
      });
    }
  }
  await condition(allHandlersFinished);
}
