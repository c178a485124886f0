import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, CancelledFailure } from '@temporalio/workflow';
import { BankFailureType, NOT_THIS_REFERENCES } from '../../../src/shared/failure-types';
import { FinanceApplicationFailureType } from '../../../src/shared/finance-application';
import { verdictOf } from '../../../src/workflows/finance-application/duplicates';
import {
  callbackRefused,
  createFailure,
  failureType,
  isCancelledActivity,
  rootMessage,
} from '../../../src/workflows/finance-application/failures';
import { pollKey, pollOutcome } from '../../../src/workflows/finance-application/polling';
import { FinanceApplication, resolveSettings } from '../../../src/workflows/finance-application/state';

/** An activity's failure as the workflow sees it: an ActivityFailure whose cause is the activity's error. */
const activityFailure = (cause: Error) =>
  new ActivityFailure('activity failed', 'getApplicationStatus', '1', RetryState.NON_RETRYABLE_FAILURE, 'w', cause);
const bankError = (type: string, message = 'bank said no') => ApplicationFailure.create({ type, message });

describe('what an activity failure means to the finance application', () => {
  it('finds the ApplicationFailure type behind an activity failure, or none', () => {
    expect(failureType(activityFailure(bankError(BankFailureType.Unavailable)))).toBe(BankFailureType.Unavailable);
    expect(failureType(bankError(BankFailureType.Rejected))).toBe(BankFailureType.Rejected);
    expect(failureType(new Error('plain'))).toBeUndefined();
    expect(failureType(activityFailure(new Error('plain')))).toBeUndefined();
  });

  it('tells a cancelled activity from a failed one, and finds the root message', () => {
    expect(isCancelledActivity(activityFailure(new CancelledFailure('cancelled')))).toBe(true);
    expect(isCancelledActivity(activityFailure(bankError(BankFailureType.Unavailable)))).toBe(false);
    expect(rootMessage(activityFailure(bankError(BankFailureType.Rejected, 'amount too high')))).toBe(
      'amount too high',
    );
    expect(rootMessage('text')).toBe('text');
  });

  it('ends a failed create as rejected (the bank refused our request) or failed (anything else)', () => {
    const rejected = createFailure(activityFailure(bankError(BankFailureType.Rejected, 'no')), 'order-1');
    expect(rejected.rejected).toBe(true);
    expect(rejected.failure).toMatchObject({
      type: FinanceApplicationFailureType.CreateRejected,
      nonRetryable: true,
      message: 'The bank did not create the finance application: no',
      details: [{ merchantReference: 'order-1', bankFailureType: BankFailureType.Rejected }],
    });
    const failed = createFailure(activityFailure(bankError(BankFailureType.Unavailable)), 'order-1');
    expect(failed).toMatchObject({ rejected: false, failure: { type: FinanceApplicationFailureType.CreateFailed } });
  });

  it('names the refused callback origin and rule', () => {
    expect(
      callbackRefused({ allowed: false, origin: 'https://evil.example', reason: 'not allowed' }, 'o'),
    ).toMatchObject({
      type: FinanceApplicationFailureType.CallbackUrlNotAllowed,
      details: [{ merchantReference: 'o', callbackOrigin: 'https://evil.example', reason: 'not allowed' }],
    });
    // The variable of the list that applied travels to the facade's 400; a verdict recorded before it has none.
    expect(
      callbackRefused(
        { allowed: false, origin: 'https://evil.example', reason: 'not allowed', variable: 'MERCHANTS_FILE' },
        'o',
      ).details,
    ).toEqual([
      {
        merchantReference: 'o',
        callbackOrigin: 'https://evil.example',
        reason: 'not allowed',
        variable: 'MERCHANTS_FILE',
      },
    ]);
    expect(
      callbackRefused({ allowed: false, origin: 'https://evil.example', reason: 'not allowed' }, 'o').details,
    ).toEqual([{ merchantReference: 'o', callbackOrigin: 'https://evil.example', reason: 'not allowed' }]);
  });

  it("reads another id's confirmation failure: a 404 or another application of ours is no duplicate, anything else unchecked", () => {
    expect(verdictOf(activityFailure(bankError(BankFailureType.ApplicationUnknown)))).toBe('not_found');
    expect(verdictOf(activityFailure(bankError(NOT_THIS_REFERENCES)))).toBe('not_found');
    expect(verdictOf(activityFailure(bankError(BankFailureType.Unavailable)))).toBe('failed');
  });

  it("takes a settled poll's read, ignores its cancellation, and counts any other failure", () => {
    expect(pollOutcome({ read: { financeApplicationId: 'fa-1', status: 'APPROVED', webhooksKnown: false } })).toBe(
      'read',
    );
    expect(pollOutcome({})).toBe('cancelled');
    expect(pollOutcome({ error: new CancelledFailure('cancelled') })).toBe('cancelled');
    expect(pollOutcome({ error: activityFailure(new CancelledFailure('cancelled')) })).toBe('cancelled');
    expect(pollOutcome({ error: activityFailure(bankError(BankFailureType.Unavailable)) })).toBe('failed');
  });
});

describe('pollKey (when the running poll starts again)', () => {
  it('restarts on webhooks proving live, not at a change a webhook announced', () => {
    const app = new FinanceApplication('order-1', resolveSettings().settings, { now: 0, notifies: false });
    app.created({ financeApplicationId: 'fa-1', status: 'CREATED' }, new Date(0));
    const before = pollKey(app.state);
    app.read('IN_PROGRESS', 'webhook', new Date(1000));
    expect(pollKey(app.state)).toBe(before);
    app.receiveWebhook('fa-1');
    app.takeWebhooks();
    expect(pollKey(app.state)).not.toBe(before);
  });
});
