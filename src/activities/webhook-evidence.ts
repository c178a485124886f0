/**
 * What this worker knows about webhook delivery. The bank delivers webhooks for the whole client application,
 * not per finance application, so one application's webhook proves that every application's can reach us.
 * Process memory on the activity side (never read by workflow code): the polling activity turns it into slower
 * polls for applications that have not had a webhook of their own yet. Relearned from the next webhook after a
 * restart; forgotten after `maxAgeMs` without one, so a bank whose webhooks stop gets the faster cap back.
 */
export class WebhookEvidence {
  private lastSeenAt: number | undefined;

  constructor(
    private readonly maxAgeMs = 24 * 60 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** A webhook reached a workflow (its read is running with `source: 'webhook'`). */
  record(): void {
    this.lastSeenAt = this.now();
  }

  /** True when a webhook was seen within `maxAgeMs`. */
  known(): boolean {
    return this.lastSeenAt !== undefined && this.now() - this.lastSeenAt <= this.maxAgeMs;
  }

  /** ISO time of the last webhook seen, for logs and health. */
  lastSeen(): string | undefined {
    return this.lastSeenAt === undefined ? undefined : new Date(this.lastSeenAt).toISOString();
  }
}
