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

/** The duration string a request may send: a number and a unit (500ms, 30s, 1.5m, 1h, 7d). */
export const DURATION_PATTERN = /^\d+(\.\d+)?\s*(ms|s|m|h|d)$/;

/**
 * A duration within `bounds`: whole milliseconds, or a string such as "500ms", "30s", "5m", "1h", "7d". A value that
 * is neither, or out of bounds, fails with one message giving the format and the bounds. The integer form carries its
 * bounds in the document (minimum, maximum); the string form its pattern, and the bounds in its description.
 */
export const durationField = (bounds: Bounds) => {
  const allowed =
    `must be whole milliseconds (${bounds.min} to ${bounds.max}) or a duration string like "30s", "5m", "1h", "7d" ` +
    `(units ms, s, m, h, d) between ${formatDuration(bounds.min)} and ${formatDuration(bounds.max)}`;
  return z
    .union(
      [
        z.number().int(allowed).min(bounds.min, allowed).max(bounds.max, allowed),
        z
          .string()
          .regex(DURATION_PATTERN)
          .transform((s) => parseDurationMs(s)!),
      ],
      { error: allowed },
    )
    .refine((ms) => ms >= bounds.min && ms <= bounds.max, allowed)
    .meta({
      description: `Milliseconds (${bounds.min} to ${bounds.max}), or a string such as "30s", "5m", "1h", "7d"; between ${formatDuration(bounds.min)} and ${formatDuration(bounds.max)}`,
    });
};

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
      .min(
        SETTING_BOUNDS.pollBackoffFactor.min,
        `must be a number from ${SETTING_BOUNDS.pollBackoffFactor.min} to ${SETTING_BOUNDS.pollBackoffFactor.max}`,
      )
      .max(
        SETTING_BOUNDS.pollBackoffFactor.max,
        `must be a number from ${SETTING_BOUNDS.pollBackoffFactor.min} to ${SETTING_BOUNDS.pollBackoffFactor.max}`,
      )
      .optional(),
    /** Longest interval once webhooks are known to reach us. */
    slowPollInterval: durationField(SETTING_BOUNDS.slowPollIntervalMs).optional(),
    /** Longest interval while no webhook was ever seen (never above slowPollInterval). */
    noWebhookPollInterval: durationField(SETTING_BOUNDS.noWebhookPollIntervalMs).optional(),
    /** Stop following the application this long after it was started. */
    deadline: durationField(SETTING_BOUNDS.deadlineMs).optional(),
  })
  .describe('Overrides of the operator defaults (POLL_*, APPLICATION_DEADLINE) for this application; no other field');

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
