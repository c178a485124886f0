import type { Logger } from 'pino';
import { WEBHOOK_SECURITY_HEADER_PATTERN } from '../shared/bank-wire';
import { activationTime, isoAt } from './clock';
import { copiesOf, newDelivery } from './deliveries';
import type { WebhookSender } from './webhook-sender';
import type { AccountWebhookActivation, AccountWebhookSettings, Clock, WebhookDelivery, WebhookFaults } from './types';

/** Throws when the settings break docs/bank-interface.md 6.3; returns them normalised. */
export function validateAccountWebhookSettings(
  settings: AccountWebhookSettings,
): Required<Pick<AccountWebhookSettings, 'activation'>> & { endpoint: string | null; securityHeader: string | null } {
  const { endpoint, securityHeader, activation = 'next-full-hour' } = settings;
  if (activation !== 'next-full-hour' && activation !== 'immediate') {
    throw new Error(`accountWebhook.activation must be 'next-full-hour' or 'immediate'`);
  }
  if (securityHeader !== undefined && !WEBHOOK_SECURITY_HEADER_PATTERN.test(securityHeader)) {
    throw new Error('accountWebhook.securityHeader must match [ a-zA-Z0-9=+/]*');
  }
  if (endpoint !== undefined && endpoint !== '') {
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw new Error('accountWebhook.endpoint must be an absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error('accountWebhook.endpoint must be an http(s) URL');
    }
    // 6.3: "It must not contain any parameters." A fragment is refused too: it could never be sent.
    if (endpoint.includes('?') || endpoint.includes('#')) {
      throw new Error('accountWebhook.endpoint must not contain any parameters (no query string)');
    }
  }
  return {
    endpoint: endpoint ? endpoint : null,
    securityHeader: securityHeader ? securityHeader : null,
    activation,
  };
}

export interface EmitResult {
  deliveries: WebhookDelivery[];
  firstAttempt: Promise<void>;
  settled: Promise<void>;
}

/**
 * The account Webhook Endpoint of docs/bank-interface.md 6.2/6.3: accountEvent and transactionEvent go there, with the
 * Security Header as `Authorization`, and only once activation has taken place.
 */
export class AccountWebhooks {
  private endpoint: string | null = null;
  private securityHeader: string | null = null;
  private activation: AccountWebhookActivation = 'next-full-hour';
  private activeFromMs: number | null = null;
  private log: WebhookDelivery[] = [];

  constructor(
    private readonly deps: {
      sender: WebhookSender;
      clock: Clock;
      logger: Logger;
      faults: () => WebhookFaults;
    },
  ) {}

  configure(settings: AccountWebhookSettings): void {
    const valid = validateAccountWebhookSettings(settings);
    this.endpoint = valid.endpoint;
    this.securityHeader = valid.securityHeader;
    this.activation = valid.activation;
    this.activeFromMs = valid.endpoint ? activationTime(this.deps.clock(), valid.activation) : null;
    this.deps.logger.info(
      { activeFrom: this.activeFromMs === null ? null : isoAt(this.activeFromMs), activation: this.activation },
      'account webhooks configured',
    );
  }

  /** `{ authorization }` when a Security Header is set, else empty. */
  headers(): Record<string, string> {
    return this.securityHeader ? { authorization: this.securityHeader } : {};
  }

  activeFrom(): string | null {
    return this.activeFromMs === null ? null : isoAt(this.activeFromMs);
  }

  /** Emits one webhook in `copies` copies; the active check happens now, at emission. */
  emit(
    kind: 'accountEvent' | 'transactionEvent',
    body: Record<string, unknown>,
    trigger: string,
    copies?: number,
  ): EmitResult {
    const faults = this.deps.faults();
    const n = copies !== undefined && copies > 1 ? copies : copiesOf(faults.duplicate);
    const deliveries: WebhookDelivery[] = [];
    const handles: { firstAttempt: Promise<void>; settled: Promise<void> }[] = [];
    for (let copy = 1; copy <= n; copy++) {
      const delivery = newDelivery(this.deps.clock, kind, this.endpoint, body, trigger, copy);
      deliveries.push(delivery);
      this.log.push(delivery);
      if (this.endpoint === null) delivery.outcome = 'no-endpoint';
      else if (this.activeFromMs === null || this.deps.clock() < this.activeFromMs) delivery.outcome = 'inactive';
      else if (faults.drop) delivery.outcome = 'dropped';
      else {
        handles.push(this.deps.sender.send(delivery, { headers: this.headers(), delayMs: faults.delayMs }));
      }
    }
    return {
      deliveries,
      firstAttempt: Promise.all(handles.map((h) => h.firstAttempt)).then(() => undefined),
      settled: Promise.all(handles.map((h) => h.settled)).then(() => undefined),
    };
  }

  sent(): WebhookDelivery[] {
    return this.log;
  }

  clearLog(): void {
    this.log = [];
  }

  /**
   * Takes back a persisted log (src/sandbox/persistence.ts). The restored records are the tasks' records too (one
   * object each), so `resolveShared` swaps in the task's copy; a delivery still pending is sent again from its first
   * attempt (at least once: the receiver deduplicates).
   */
  restore(log: WebhookDelivery[], resolveShared: (d: WebhookDelivery) => WebhookDelivery = (d) => d): void {
    this.log = log.map(resolveShared);
    for (const delivery of this.log) {
      if (delivery.outcome !== 'pending' || delivery.url === null || this.endpoint === null) continue;
      delivery.url = this.endpoint;
      delivery.attempts = [];
      void this.deps.sender.send(delivery, { headers: this.headers() });
    }
  }
}
