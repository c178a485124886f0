import { ParentClosePolicy, getExternalWorkflowHandle, isCancellation, log, startChild } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  lateAccountEventSignal,
  lateAccountEventsWorkflowType,
  type LateAccountEventSignalInput,
} from '../../shared/consent-refresh';
import { lateAccountEventsWorkflowId } from '../../shared/ids';
import { ConsentId } from '../../shared/search-attributes';
import type { lateAccountEventsWorkflow } from '../late-account-events/workflow';
import type { ConsentRefresh } from './refresh';

/** Hand-off attempts (signal, else start) before an event is given up; each failure means the target just changed. */
export const HAND_OFF_ATTEMPTS = 5;

/** Where late reports go: the consent's lateAccountEventsWorkflow, started with this if none runs. */
export interface LateReportsTarget {
  merchantId?: string;
  consentId: string;
  callbackUrl?: string;
}

/** Hands the recorded events the refresh cannot take to the late workflow, in order (LEARNED_BANKS_PATCH). */
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
  const { merchantId, consentId, callbackUrl } = target;
  const workflowId = lateAccountEventsWorkflowId(consentId);
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
        typedSearchAttributes: [{ key: ConsentId, value: consentId }],
        staticSummary: `Late bank reports of consent ${consentId}`,
      });
      return true;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  return false;
}
