import { ParentClosePolicy, getExternalWorkflowHandle, isCancellation, log, startChild } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  lateAccountEventSignal,
  lateAccountEventsWorkflowType,
  type LateAccountEventSignalInput,
} from '../../shared/consent-refresh';
import { lateAccountEventsWorkflowId } from '../../shared/ids';
import { ConsentId, MerchantId } from '../../shared/search-attributes';
import type { lateAccountEventsWorkflow } from '../late-account-events/workflow';
import type { ConsentRefresh } from './refresh';

/** Hand-off attempts (signal, else start) before an event is given up; each failure means the target just changed. */
export const HAND_OFF_ATTEMPTS = 5;

/** Where late reports go: the lateAccountEventsWorkflow `workflowId`, started with the rest if none runs. */
export interface LateReportsTarget {
  workflowId: string;
  merchantId: string;
  consentId: string;
  callbackUrl?: string;
}

/**
 * The refresh's late workflow: its merchant's own, so a consent that changed hands never sends the new owner's
 * reports to the previous owner's late workflow.
 */
export function lateReportsTarget(input: {
  merchantId: string;
  consentId: string;
  lateReportsCallbackUrl?: string;
}): LateReportsTarget {
  const { merchantId, consentId } = input;
  return {
    workflowId: lateAccountEventsWorkflowId(merchantId, consentId),
    merchantId,
    consentId,
    callbackUrl: input.lateReportsCallbackUrl,
  };
}

/** Hands the recorded events the refresh cannot take to the late workflow, in order. */
export async function handOffPending(refresh: ConsentRefresh, target: LateReportsTarget): Promise<void> {
  while (refresh.handOff.length > 0) {
    const next = refresh.handOff[0]!;
    const handed = await handOffLateReport(next, target);
    refresh.handOff.shift();
    if (handed) refresh.handedOffEvents++;
    else
      log.error('accountEvent could not be handed to the late workflow (kept in this history only)', {
        consentId: refresh.consentId,
        taskId: refresh.taskId,
        eventTaskId: next.event.taskId,
        bankCode: next.event.bankCode,
      });
  }
}

/**
 * Signal the consent's late workflow; if none runs, start it as an abandoned child carrying the report. A
 * workflow cannot signal-with-start: a failed signal (not running) and a failed start (started meanwhile by the
 * receiver) each mean the other will work.
 */
async function handOffLateReport(report: LateAccountEventSignalInput, target: LateReportsTarget): Promise<boolean> {
  const { workflowId, merchantId, consentId, callbackUrl } = target;
  for (let attempt = 1; attempt <= HAND_OFF_ATTEMPTS; attempt++) {
    try {
      await getExternalWorkflowHandle(workflowId).signal(lateAccountEventSignal, report);
      return true;
    } catch (err) {
      if (isCancellation(err)) throw err;
    }
    try {
      await startChild<typeof lateAccountEventsWorkflow>(lateAccountEventsWorkflowType, {
        workflowId,
        args: [{ merchantId, consentId, callbackUrl, handedOff: [report] }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        // Its owner, as the receiver's late workflows carry it: the facade shows the reports to that merchant only.
        typedSearchAttributes: [
          { key: MerchantId, value: merchantId },
          { key: ConsentId, value: consentId },
        ],
        staticSummary: `Late bank reports of consent ${consentId}`,
      });
      return true;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  return false;
}
