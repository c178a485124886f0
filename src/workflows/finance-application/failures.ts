import { ActivityFailure, ApplicationFailure, isCancellation } from '@temporalio/workflow';
import type { Activities } from '../../activities/types';
import { BankFailureType } from '../../shared/failure-types';
import { FinanceApplicationFailureType } from '../../shared/finance-application';

/**
 * What an activity's failure means to the finance application, and the failures the run ends with. Workflows branch
 * on `ApplicationFailure.type`, never on classes of ours (unit-tested in test/workflows/finance-application/).
 */

/** The `ApplicationFailure.type` behind an activity failure. */
export function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/** An activity that ended because we cancelled it (TRY_CANCEL reports it as an ActivityFailure). */
export function isCancelledActivity(err: unknown): boolean {
  return err instanceof ActivityFailure && isCancellation(err.cause);
}

export function rootMessage(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}

/** A failed read that is the bank's 404 on our application. */
export function isUnknownAtBank(err: unknown): boolean {
  return failureType(err) === BankFailureType.ApplicationUnknown;
}

/** The bank did not create the application: rejected (its 4xx on our request) or failed (anything else). */
export function createFailure(
  err: unknown,
  merchantReference: string,
): { failure: ApplicationFailure; rejected: boolean } {
  const type = failureType(err);
  const rejected = type === BankFailureType.Rejected || type === 'InvalidApplicationRequest';
  const failure = ApplicationFailure.create({
    type: rejected ? FinanceApplicationFailureType.CreateRejected : FinanceApplicationFailureType.CreateFailed,
    message: `The bank did not create the finance application: ${rootMessage(err)}`,
    nonRetryable: true,
    details: [{ merchantReference, bankFailureType: type }],
  });
  return { failure, rejected };
}

/** The worker's verdict could not be had: the run ends before the bank is called. */
export function callbackCheckFailed(err: unknown, merchantReference: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FinanceApplicationFailureType.CreateFailed,
    message: `The callback URL could not be checked: ${rootMessage(err)}`,
    nonRetryable: true,
    details: [{ merchantReference }],
  });
}

type Refusal = Extract<Awaited<ReturnType<Activities['checkCallbackUrl']>>, { allowed: false }>;

/** The worker refused the callback URL (outside the merchant's allow-list: the reason and `variable` name which). */
export function callbackRefused(verdict: Refusal, merchantReference: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FinanceApplicationFailureType.CallbackUrlNotAllowed,
    message: `The finance application was not created: ${verdict.reason}`,
    nonRetryable: true,
    details: [
      {
        merchantReference,
        callbackOrigin: verdict.origin ?? null,
        reason: verdict.reason,
        // Absent from verdicts recorded before it existed: the facade then names CALLBACK_ALLOWED_ORIGINS.
        ...(verdict.variable !== undefined ? { variable: verdict.variable } : {}),
      },
    ],
  });
}
