/**
 * The fallback polling policy of a finance application: what it costs to keep an application open while
 * nothing happens. Plain code, shared by the workflow (which resolves it from its settings) and the polling
 * activity (which computes each next read from it). Unit-tested in test/shared/poll-policy.test.ts.
 *
 * - For `responsiveWindowMs` after the application was created or its status last changed, read every
 *   `fastIntervalMs`: a customer acting right away is seen right away.
 * - Then each interval is `backoffFactor` times the one before, up to a cap: `maxIntervalMs` once webhooks are
 *   known to reach us (a safety net for a lost webhook), `maxIntervalWithoutWebhooksMs` while none ever did
 *   (polling is then the only way to learn a change).
 * A change after any quiet period is found within the current interval, which never exceeds the cap.
 */
export interface PollPolicy {
  fastIntervalMs: number;
  responsiveWindowMs: number;
  backoffFactor: number;
  maxIntervalMs: number;
  maxIntervalWithoutWebhooksMs: number;
}

/** Defaults: 30 s for 5 minutes, then ×2 up to 5 minutes (12 reads an hour) or 15 minutes with webhooks (4). */
export const DEFAULT_POLL_POLICY: Readonly<PollPolicy> = {
  fastIntervalMs: 30_000,
  responsiveWindowMs: 5 * 60_000,
  backoffFactor: 2,
  maxIntervalMs: 15 * 60_000,
  maxIntervalWithoutWebhooksMs: 5 * 60_000,
};

/**
 * Delay before the next read when the status has been unchanged for `quietForMs`. A closed form of the
 * geometric backoff (each delay is the previous one times the factor), so any attempt can compute it from
 * the time alone: after the window, d = fast + (quiet − window) × (factor − 1), clamped to [fast, cap].
 */
export function pollDelayMs(policy: PollPolicy, quietForMs: number, webhooksKnown: boolean): number {
  const cap = Math.max(
    policy.fastIntervalMs,
    webhooksKnown ? policy.maxIntervalMs : Math.min(policy.maxIntervalWithoutWebhooksMs, policy.maxIntervalMs),
  );
  const quiet = Math.max(0, quietForMs);
  if (quiet < policy.responsiveWindowMs) return Math.min(policy.fastIntervalMs, cap);
  const grown = policy.fastIntervalMs + (quiet - policy.responsiveWindowMs) * (policy.backoffFactor - 1);
  return Math.round(Math.min(cap, Math.max(policy.fastIntervalMs, grown)));
}

/** Read times (ms after the quiet period began) over `spanMs` when nothing changes: for tests and the bench. */
export function pollSchedule(policy: PollPolicy, spanMs: number, webhooksKnown: boolean): number[] {
  const at: number[] = [];
  for (let t = pollDelayMs(policy, 0, webhooksKnown); t <= spanMs; t += pollDelayMs(policy, t, webhooksKnown)) {
    at.push(t);
  }
  return at;
}

/** Problems with a policy, as messages naming the field (empty when valid). */
export function pollPolicyProblems(policy: PollPolicy): string[] {
  const problems: string[] = [];
  for (const key of ['fastIntervalMs', 'maxIntervalMs', 'maxIntervalWithoutWebhooksMs'] as const) {
    if (!(Number.isFinite(policy[key]) && policy[key] > 0)) problems.push(`${key} must be a positive number`);
  }
  if (!(Number.isFinite(policy.responsiveWindowMs) && policy.responsiveWindowMs >= 0)) {
    problems.push('responsiveWindowMs must be zero or more');
  }
  if (!(Number.isFinite(policy.backoffFactor) && policy.backoffFactor >= 1)) {
    problems.push('backoffFactor must be at least 1');
  }
  return problems;
}
