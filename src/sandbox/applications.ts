import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { CreateApplicationRequest } from '../shared/bank-wire';
import { isoAt } from './clock';
import { copiesOf, newDelivery } from './deliveries';
import type { Timers } from './timers';
import type { WebhookSender } from './webhook-sender';
import type {
  ApplicationMatch,
  ApplicationRecord,
  ApplicationScript,
  Clock,
  WebhookDelivery,
  WebhookFaults,
} from './types';

/** The default lifecycle's statuses: the first at creation, each next one `stepMs` later. */
export const DEFAULT_LIFECYCLE_STATUSES: readonly string[] = [
  'CREATED',
  'IN_PROGRESS',
  'APPROVED',
  'SIGNED',
  'COMPLETED',
];

/** The default lifecycle: `statuses[0]` (at creation), then each next status `stepMs` after the previous one. */
export function defaultScript(
  stepMs: number,
  statuses: readonly string[] = DEFAULT_LIFECYCLE_STATUSES,
): ApplicationScript {
  return {
    initialStatus: statuses[0],
    steps: statuses.slice(1).map((status) => ({ status, afterMs: stepMs })),
  };
}

interface ScriptRule {
  id: string;
  script: ApplicationScript;
  match?: ApplicationMatch;
}

interface ApplicationState {
  record: ApplicationRecord;
  /** Sends held back by the reorder switch, released newest first after the last step. */
  held: (() => Promise<void>)[];
  /** The next scripted step and when it is due (epoch ms): what a restarted sandbox resumes. */
  next?: { index: number; at: number };
}

/** One application as persisted (src/sandbox/persistence.ts): its record and its next step. */
export interface ApplicationSnapshot {
  record: ApplicationRecord;
  next?: { index: number; at: number };
}

/**
 * Finance applications: creation, the scripted status lifecycle, and the finance-application webhook
 * (docs/bank-interface.md 6.1) to the webhookUrl exactly as given.
 *
 * Decision: the Webhook Security Header (6.3) is sent as `Authorization` on these webhooks too, when set: 6.3
 * says "each webhook call", and activation (6.2) concerns the account webhooks only, so it does not gate these.
 *
 * Decision: creation is not a status change, so no webhook is sent for the initial CREATED; one is sent after
 * every later change ("every change of status triggers a webhook", section 3).
 */
export class Applications {
  private readonly states = new Map<string, ApplicationState>();
  private rules: ScriptRule[] = [];

  constructor(
    private readonly deps: {
      timers: Timers;
      sender: WebhookSender;
      clock: Clock;
      logger: Logger;
      stepMs: number;
      /** The default lifecycle's statuses (another bank's vocabulary: SandboxOptions.lifecycle.statuses). */
      statuses?: readonly string[];
      faults: () => WebhookFaults;
      /** The Webhook Security Header as `Authorization`, when set (6.3: "sent in each webhook call"). */
      headers: () => Record<string, string>;
    },
  ) {}

  addRule(script: ApplicationScript, match?: ApplicationMatch): string {
    const id = randomUUID();
    this.rules.push({ id, script: structuredClone(script), match });
    return id;
  }

  clearRules(): void {
    this.rules = [];
  }

  /** Creates the application and starts its lifecycle; with beforeCreateResponse, resolves after the first webhook's first attempt. */
  async create(body: CreateApplicationRequest): Promise<ApplicationRecord> {
    const now = isoAt(this.deps.clock());
    const script = this.scriptFor(body);
    const initial = script.initialStatus ?? this.deps.statuses?.[0] ?? DEFAULT_LIFECYCLE_STATUSES[0]!;
    const record: ApplicationRecord = {
      financeApplicationId: randomUUID(),
      createRequest: structuredClone(body),
      createdAt: now,
      status: initial,
      updatedAt: now,
      statusHistory: [{ status: initial, at: now }],
      script,
      webhooks: [],
    };
    const state: ApplicationState = { record, held: [] };
    this.states.set(record.financeApplicationId, state);
    this.deps.logger.info({ financeApplicationId: record.financeApplicationId }, 'application created');
    const created = structuredClone(record);
    if (script.webhooks?.beforeCreateResponse && script.steps.length > 0) {
      await this.step(state, 0);
    } else {
      this.schedule(state, 0);
    }
    return created;
  }

  get(id: string): ApplicationRecord | undefined {
    return this.states.get(id)?.record;
  }

  all(): ApplicationRecord[] {
    return [...this.states.values()].map((s) => s.record);
  }

  /** A status change outside the script (the script goes on); sent at once, never held for reorder. */
  setStatus(id: string, status: string): void {
    const state = this.mustGet(id);
    if (this.change(state, status)) void this.emit(state, `status:${status}`, {}, false).firstAttempt;
  }

  async sendBurst(id: string, count: number): Promise<WebhookDelivery[]> {
    const state = this.mustGet(id);
    const url = state.record.createRequest.webhookUrl;
    if (typeof url !== 'string') throw new Error(`application ${id} has no webhookUrl`);
    const deliveries: WebhookDelivery[] = [];
    const settled: Promise<void>[] = [];
    for (let copy = 1; copy <= count; copy++) {
      const delivery = newDelivery(
        this.deps.clock,
        'financeApplication',
        url,
        { financeApplicationId: id },
        'manual',
        copy,
      );
      state.record.webhooks.push(delivery);
      deliveries.push(delivery);
      settled.push(this.deps.sender.send(delivery, { headers: this.deps.headers() }).settled);
    }
    await Promise.all(settled);
    return deliveries;
  }

  clear(): void {
    this.states.clear();
  }

  /** Every application with its next step, for persistence. */
  snapshot(): ApplicationSnapshot[] {
    return [...this.states.values()].map(({ record, next }) => ({ record, ...(next ? { next } : {}) }));
  }

  /**
   * Takes back persisted applications: each goes on with its next step at its due time (at once when overdue), and
   * each webhook still pending is sent again from its first attempt (at least once; held reorders are sent as is).
   */
  restore(snapshots: ApplicationSnapshot[]): void {
    for (const { record, next } of snapshots) {
      const state: ApplicationState = { record, held: [] };
      this.states.set(record.financeApplicationId, state);
      if (next) this.scheduleAt(state, next.index, next.at);
      for (const delivery of record.webhooks) {
        if (delivery.outcome !== 'pending' || delivery.url === null) continue;
        delivery.attempts = [];
        void this.deps.sender.send(delivery, { headers: this.deps.headers() });
      }
    }
  }

  private mustGet(id: string): ApplicationState {
    const state = this.states.get(id);
    if (!state) throw new Error(`unknown financeApplicationId ${id}`);
    return state;
  }

  private scriptFor(body: CreateApplicationRequest): ApplicationScript {
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const rule = this.rules[i]!;
      if (matches(rule.match, body)) return structuredClone(rule.script);
    }
    return defaultScript(this.deps.stepMs, this.deps.statuses);
  }

  private schedule(state: ApplicationState, index: number): void {
    const step = state.record.script.steps[index];
    if (!step) return;
    this.scheduleAt(state, index, this.deps.clock() + step.afterMs);
  }

  private scheduleAt(state: ApplicationState, index: number, at: number): void {
    if (!state.record.script.steps[index]) return;
    state.next = { index, at };
    this.deps.timers.after(at - this.deps.clock(), () => void this.step(state, index));
  }

  private async step(state: ApplicationState, index: number): Promise<void> {
    const { script } = state.record;
    const step = script.steps[index]!;
    const isLast = index === script.steps.length - 1;
    state.next = undefined;
    let first: Promise<void> = Promise.resolve();
    if (this.change(state, step.status)) {
      first = this.emit(
        state,
        `status:${step.status}`,
        { drop: step.dropWebhook },
        script.webhooks?.reorder === true,
      ).firstAttempt;
    }
    if (isLast) void this.release(state.held.splice(0).reverse());
    this.schedule(state, index + 1);
    await first;
  }

  /** One after the other (each after the previous first attempt), so the receiver sees exactly this order. */
  private async release(sends: (() => Promise<void>)[]): Promise<void> {
    for (const send of sends) await send();
  }

  private change(state: ApplicationState, status: string): boolean {
    const { record } = state;
    if (record.status === status) return false;
    const at = isoAt(this.deps.clock());
    record.status = status;
    record.updatedAt = at;
    record.statusHistory.push({ status, at });
    this.deps.logger.info({ financeApplicationId: record.financeApplicationId, status }, 'application status changed');
    return true;
  }

  private emit(
    state: ApplicationState,
    trigger: string,
    extra: WebhookFaults,
    hold: boolean,
  ): { firstAttempt: Promise<void> } {
    const { record } = state;
    const url = record.createRequest.webhookUrl;
    if (typeof url !== 'string') return { firstAttempt: Promise.resolve() };
    const faults: WebhookFaults = {
      ...this.deps.faults(),
      ...definedOnly(record.script.webhooks ?? {}),
      ...definedOnly(extra),
    };
    const body = { financeApplicationId: record.financeApplicationId };
    if (faults.drop) {
      const delivery = newDelivery(this.deps.clock, 'financeApplication', url, body, trigger);
      delivery.outcome = 'dropped';
      record.webhooks.push(delivery);
      return { firstAttempt: Promise.resolve() };
    }
    const firsts: Promise<void>[] = [];
    for (let copy = 1; copy <= copiesOf(faults.duplicate); copy++) {
      const delivery = newDelivery(this.deps.clock, 'financeApplication', url, body, trigger, copy);
      record.webhooks.push(delivery);
      const send = (): Promise<void> => {
        const { firstAttempt } = this.deps.sender.send(delivery, {
          headers: this.deps.headers(),
          delayMs: faults.delayMs,
        });
        firsts.push(firstAttempt);
        return firstAttempt;
      };
      if (hold) state.held.push(send);
      else void send();
    }
    return { firstAttempt: Promise.all(firsts).then(() => undefined) };
  }
}

function matches(match: ApplicationMatch | undefined, body: CreateApplicationRequest): boolean {
  if (match === undefined) return true;
  if (typeof match === 'function') return match(body);
  return Object.entries(match).every(([key, value]) => body[key] === value);
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
