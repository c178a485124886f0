import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { TASK_STATUS_FINISHED, type AccountEventBody, type TransactionEventBody } from '../shared/bank-wire';
import type { AccountWebhooks } from './account-webhooks';
import { isoAt } from './clock';
import type { Timers } from './timers';
import type {
  Clock,
  ConsentAccount,
  ConsentBank,
  ConsentSetup,
  RefreshTaskRecord,
  ResolvedConsent,
  TransactionEventsRequest,
} from './types';

/** Banks other than the operating bank that a derived consent may link. */
export const BANK_POOL: readonly { bankCode: string; bankName: string }[] = [
  { bankCode: 'KSTR', bankName: 'Kestrel Savings Bank' },
  { bankCode: 'ALDR', bankName: 'Alder Cooperative Bank' },
  { bankCode: 'BRCH', bankName: 'Birchwood Bank' },
  { bankCode: 'CDAR', bankName: 'Cedar Trust' },
  { bankCode: 'DNMR', bankName: 'Danmark Regional Bank' },
  { bankCode: 'ELMB', bankName: 'Elm Street Bank' },
  { bankCode: 'FJRD', bankName: 'Fjord Merchant Bank' },
  { bankCode: 'GRNT', bankName: 'Granite Savings' },
];

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Deterministic data for any consentId: 2–4 other banks with 1–3 accounts each, and 1–2 operating-bank accounts. */
export function deriveConsent(consentId: string): { operatingAccounts: string[]; banks: ConsentBank[] } {
  const h = digest(consentId);
  const bankCount = 2 + (h[0]! % 3);
  const banks = [...BANK_POOL]
    .sort((a, b) => digest(consentId + a.bankCode).compare(digest(consentId + b.bankCode)))
    .slice(0, bankCount)
    .map(({ bankCode, bankName }) => {
      const b = digest(`${consentId}:${bankCode}`);
      const accounts = Array.from(
        { length: 1 + (b[0]! % 3) },
        (_, i) => `${bankCode}-${digest(`${consentId}:${bankCode}:${i}`).toString('hex').slice(0, 10)}`,
      );
      return { bankCode, bankName, accounts };
    });
  const operatingAccounts = Array.from(
    { length: 1 + (h[1]! % 2) },
    (_, i) => `OPB-${digest(`${consentId}:operating:${i}`).toString('hex').slice(0, 10)}`,
  );
  return { operatingAccounts, banks };
}

const accountIdOf = (account: ConsentAccount): string => (typeof account === 'string' ? account : account.accountId);

/** A bank's accountEvent not emitted yet: what a restarted sandbox resumes. */
interface PendingBankEvent {
  taskId: string;
  bankCode: string;
  /** Epoch ms. */
  dueAt: number;
  refreshIndex: number;
  copies: number;
}

/** Consents and refresh tasks as persisted (src/sandbox/persistence.ts). */
export interface ConsentsSnapshot {
  overrides: [string, ConsentSetup][];
  refreshCounts: [string, number][];
  tasks: RefreshTaskRecord[];
  pending: PendingBankEvent[];
}

/**
 * Consents and refresh tasks (docs/bank-interface.md 4.4 and 6.2): PUT /refresh starts a task; each linked bank other
 * than the operating bank answers separately, after its own delay, with one accountEvent.
 */
export class Consents {
  private overrides = new Map<string, ConsentSetup>();
  private refreshCounts = new Map<string, number>();
  private tasks: RefreshTaskRecord[] = [];
  private pending: PendingBankEvent[] = [];

  constructor(
    private readonly deps: {
      timers: Timers;
      webhooks: AccountWebhooks;
      clock: Clock;
      logger: Logger;
      bankDelayMs: [number, number];
    },
  ) {}

  set(consentId: string, setup: ConsentSetup): void {
    this.overrides.set(consentId, structuredClone(setup));
  }

  resolve(consentId: string): ResolvedConsent {
    const derived = deriveConsent(consentId);
    const o = this.overrides.get(consentId) ?? {};
    return structuredClone({
      consentId,
      operatingAccounts: o.operatingAccounts ?? derived.operatingAccounts,
      banks: o.banks ?? derived.banks,
      duplicateEvents: Math.max(1, Math.floor(o.duplicateEvents ?? 1)),
      shuffle: o.shuffle ?? false,
      eventBeforeResponse: o.eventBeforeResponse ?? false,
    });
  }

  /** Consents seen so far (refreshed or configured): the spontaneous transactionEvents pick from these. */
  known(): string[] {
    return [...new Set([...this.overrides.keys(), ...this.refreshCounts.keys()])];
  }

  allTasks(): RefreshTaskRecord[] {
    return this.tasks;
  }

  clear(): void {
    this.overrides.clear();
    this.refreshCounts.clear();
    this.tasks = [];
    this.pending = [];
  }

  snapshot(): ConsentsSnapshot {
    return {
      overrides: [...this.overrides],
      refreshCounts: [...this.refreshCounts],
      tasks: this.tasks,
      pending: this.pending,
    };
  }

  /**
   * Takes back persisted consents and tasks: each bank that had not answered yet answers at its due time (at once
   * when overdue; a shuffled task's banks then answer in their natural order).
   */
  restore(snapshot: ConsentsSnapshot): void {
    this.overrides = new Map(snapshot.overrides);
    this.refreshCounts = new Map(snapshot.refreshCounts);
    this.tasks = snapshot.tasks;
    for (const p of snapshot.pending) {
      const task = this.tasks.find((t) => t.taskId === p.taskId);
      const bank = task?.banks.find((b) => b.bankCode === p.bankCode);
      if (!task || !bank) continue;
      this.pending.push(p);
      this.deps.timers.after(p.dueAt - this.deps.clock(), () => void this.emitBank(task, bank, p));
    }
  }

  /** One bank's accountEvent for a task (docs/bank-interface.md 6.2: one webhook per bank per consent). */
  private emitBank(
    task: RefreshTaskRecord,
    bank: ConsentBank,
    how: { refreshIndex: number; copies: number },
  ): Promise<void> {
    this.pending = this.pending.filter((p) => !(p.taskId === task.taskId && p.bankCode === bank.bankCode));
    const body: AccountEventBody = {
      consentId: task.consentId,
      taskId: task.taskId,
      taskStatus: bank.taskStatus ?? TASK_STATUS_FINISHED,
      bankCode: bank.bankCode,
      bankName: bank.bankName,
      accounts: bank.accounts.map((account) => ({
        accountId: accountIdOf(account),
        eventType:
          (typeof account === 'string' ? undefined : account.eventType) ??
          (how.refreshIndex === 0 ? 'ADDED' : 'UPDATED'),
      })),
    };
    const result = this.deps.webhooks.emit('accountEvent', { ...body }, 'refresh', how.copies);
    task.events.push(...result.deliveries);
    return result.firstAttempt;
  }

  /** Starts a refresh task; with eventBeforeResponse, resolves after the first bank's event was attempted once. */
  async startRefresh(consentId: string): Promise<RefreshTaskRecord> {
    const consent = this.resolve(consentId);
    const refreshIndex = this.refreshCounts.get(consentId) ?? 0;
    this.refreshCounts.set(consentId, refreshIndex + 1);
    const [min, max] = this.deps.bankDelayMs;
    const task: RefreshTaskRecord = {
      taskId: randomUUID(),
      consentId,
      requestedAt: isoAt(this.deps.clock()),
      banks: consent.banks.map((bank) => ({
        ...bank,
        delayMs: bank.delayMs ?? Math.round(min + Math.random() * (max - min)),
      })),
      events: [],
    };
    this.tasks.push(task);
    this.deps.logger.info({ consentId, taskId: task.taskId, banks: task.banks.length }, 'refresh started');

    const answering = task.banks.filter((bank) => !bank.neverAnswers).sort((a, b) => a.delayMs - b.delayMs);
    const how = { refreshIndex, copies: consent.duplicateEvents };
    const requestedAt = this.deps.clock();
    for (const bank of answering)
      this.pending.push({ taskId: task.taskId, bankCode: bank.bankCode, dueAt: requestedAt + bank.delayMs, ...how });
    const emit = (bank: ConsentBank): Promise<void> => this.emitBank(task, bank, how);

    let before: Promise<void> = Promise.resolve();
    let rest = answering;
    if (consent.eventBeforeResponse && answering.length > 0) {
      before = emit(answering[0]!);
      rest = answering.slice(1);
    }
    if (consent.shuffle) {
      // Reverse of the natural order, one after the other, after the longest delay: deterministic, so testable.
      const lastDelay = Math.max(0, ...rest.map((bank) => bank.delayMs));
      this.deps.timers.after(lastDelay, () => {
        void (async () => {
          for (const bank of [...rest].reverse()) await emit(bank);
        })();
      });
    } else {
      for (const bank of rest) this.deps.timers.after(bank.delayMs, () => void emit(bank));
    }
    await before;
    return task;
  }

  async emitTransactionEvents(
    consentId: string,
    request: TransactionEventsRequest = {},
    trigger = 'transactions',
  ): Promise<void> {
    const { count = 1, withinMs = 0 } = request;
    const accountIds = request.accountIds ?? this.resolve(consentId).operatingAccounts;
    if (!this.refreshCounts.has(consentId)) this.refreshCounts.set(consentId, 0);
    const emitOne = (): void => {
      const body: TransactionEventBody = {
        consentId,
        eventType: 'NEW',
        accounts: accountIds.map((accountId) => ({ accountId })),
      };
      this.deps.webhooks.emit('transactionEvent', { ...body }, trigger);
    };
    const waits: Promise<boolean>[] = [];
    for (let i = 0; i < count; i++) {
      if (withinMs <= 0) emitOne();
      else waits.push(this.deps.timers.sleep(Math.random() * withinMs).then((ok) => (ok && emitOne(), ok)));
    }
    await Promise.all(waits);
  }

  /** One transactionEvent for one random operating account of one random known consent (embedded demo). */
  spontaneousTransactionEvent(): void {
    const known = this.known();
    const consentId = known[Math.floor(Math.random() * known.length)];
    if (consentId === undefined) return;
    const accounts = this.resolve(consentId).operatingAccounts;
    const accountId = accounts[Math.floor(Math.random() * accounts.length)];
    if (accountId !== undefined) void this.emitTransactionEvents(consentId, { accountIds: [accountId] }, 'spontaneous');
  }
}
