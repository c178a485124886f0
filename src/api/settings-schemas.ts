import { z } from 'zod';
import {
  formatDuration,
  parseDurationMs,
  SETTING_BOUNDS,
  type ApplicationOverrides,
  type Bounds,
} from '../shared/application-settings';

/**
 * Per-request settings of the merchant facade, bounded as the environment is (SETTING_BOUNDS in
 * src/shared/application-settings.ts): a value out of bounds is a 400 naming the field.
 */

/** A duration within `bounds`: whole milliseconds, or a string such as "500ms", "30s", "5m", "1h", "7d". */
export const durationField = (bounds: Bounds) =>
  z
    .union([
      z.number().int('must be whole milliseconds'),
      z
        .string()
        .regex(/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/, 'must be milliseconds or a string like "30s", "5m", "1h", "7d"')
        .transform((s) => parseDurationMs(s)!),
    ])
    .refine(
      (ms) => ms >= bounds.min && ms <= bounds.max,
      `must be between ${formatDuration(bounds.min)} and ${formatDuration(bounds.max)}`,
    );

/** `settings` of POST /applications: the poll policy and the deadline of this one application. */
export const ApplicationSettingsSchema = z
  .strictObject({
    /** Poll interval after creation and after each change. */
    fastPollInterval: durationField(SETTING_BOUNDS.fastPollIntervalMs).optional(),
    /** How long polling stays fast after creation or a change. */
    responsiveWindow: durationField(SETTING_BOUNDS.responsiveWindowMs).optional(),
    /** Growth of the interval after the responsive window. */
    pollBackoffFactor: z
      .number()
      .min(SETTING_BOUNDS.pollBackoffFactor.min)
      .max(SETTING_BOUNDS.pollBackoffFactor.max)
      .optional(),
    /** Longest interval once webhooks are known to reach us. */
    slowPollInterval: durationField(SETTING_BOUNDS.slowPollIntervalMs).optional(),
    /** Longest interval while no webhook was ever seen (never above slowPollInterval). */
    noWebhookPollInterval: durationField(SETTING_BOUNDS.noWebhookPollIntervalMs).optional(),
    /** Stop following the application this long after it was started. */
    deadline: durationField(SETTING_BOUNDS.deadlineMs).optional(),
  })
  .describe('Overrides of the operator defaults (POLL_*, APPLICATION_DEADLINE) for this application');

export type ApplicationSettingsBody = z.infer<typeof ApplicationSettingsSchema>;

/** The request's names (durations without `Ms`) as the workflow's settings. */
export function applicationOverrides(body: ApplicationSettingsBody | undefined): ApplicationOverrides {
  if (!body) return {};
  return {
    fastPollIntervalMs: body.fastPollInterval,
    responsiveWindowMs: body.responsiveWindow,
    pollBackoffFactor: body.pollBackoffFactor,
    slowPollIntervalMs: body.slowPollInterval,
    noWebhookPollIntervalMs: body.noWebhookPollInterval,
    deadlineMs: body.deadline,
  };
}

/** A settings field of the workflow as the request names it (`slowPollIntervalMs` → `slowPollInterval`). */
export const requestFieldOf = (field: string): string => field.replace(/Ms$/, '');
