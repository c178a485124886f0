import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** The ids an activity's input may carry (one object parameter each) that find its application or refresh. */
export const LOGGED_ACTIVITY_IDS = ['merchantReference', 'financeApplicationId', 'consentId', 'taskId'] as const;

/**
 * The ids present as strings in an activity's input, or in its `event` (a merchant callback's: the application's or
 * the consent's ids travel there); nothing else of the input (customer data) is taken.
 */
export function activityIds(input: unknown): Record<string, string> {
  if (typeof input !== 'object' || input === null) return {};
  const { event } = input as { event?: unknown };
  const ids: Record<string, string> = {};
  for (const source of [event, input]) {
    if (typeof source !== 'object' || source === null) continue;
    for (const key of LOGGED_ACTIVITY_IDS) {
      const value = (source as Record<string, unknown>)[key];
      if (typeof value === 'string') ids[key] = value;
    }
  }
  return ids;
}

/**
 * Every `log` line of an activity (its own and the bank client's, src/telemetry/logging.ts bankClientLogger) carries the
 * application's or refresh's ids from the activity's input, beside the workflow and activity ids the SDK adds.
 */
export const activityLogIds: ActivityInterceptorsFactory = () => {
  let ids: Record<string, string> = {};
  return {
    inbound: {
      execute(input, next) {
        ids = activityIds(input.args[0]);
        return next(input);
      },
    },
    outbound: {
      getLogAttributes(attributes, next) {
        return next({ ...ids, ...attributes });
      },
    },
  };
};
