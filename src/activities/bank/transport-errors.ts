import { transientErrorCode } from '../../http-client/transport';
import { BankError, BankUnavailableError, type BankOperation } from './errors';

/**
 * Classifies a thrown transport error. The caller's own abort (activity cancellation) is rethrown untouched
 * so Temporal reports a cancellation, not a bank outage; our deadline and network errors become
 * BankUnavailableError; anything else (a bug) is rethrown as is.
 */
export function classifyTransportError(
  operation: BankOperation,
  err: unknown,
  callerSignal: AbortSignal | undefined,
  deadline: AbortSignal,
): unknown {
  if (err instanceof BankError) return err;
  if (callerSignal?.aborted) return callerSignal.reason ?? err;
  if (deadline.aborted) {
    return new BankUnavailableError(operation, 'bank did not answer in time', { code: 'TIMEOUT', cause: err });
  }
  const code = transientErrorCode(err);
  if (code) {
    return new BankUnavailableError(operation, `bank unreachable (${code})`, { code, cause: err });
  }
  return err;
}
