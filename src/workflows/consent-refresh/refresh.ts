import { ActivityFailure, ApplicationFailure, type Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common';
import { TASK_STATUS_FINISHED } from '../../shared/bank-wire';
import {
  DEFAULT_REFRESH_QUIET_PERIOD,
  DEFAULT_REFRESH_TIMEOUT,
  REFRESH_NOT_STARTED,
  type AccountEventSignalInput,
  type BankRefreshResult,
  type ConsentRefreshInput,
  type ConsentRefreshProgress,
  type ConsentRefreshResult,
  type LateAccountEventSignalInput,
  type RefreshEndReason,
} from '../../shared/consent-refresh';
import type { FanInView } from './fan-in';

/**
 * The state and decisions of one consent refresh, as plain code (samples-typescript `safe-message-handlers`
 * style): the workflow registers handlers and runs the process; this class records what the handlers receive,
 * decides what an accountEvent means (this task's new bank, a duplicate, another task's, one after the close) and
 * builds the progress and the result. No Temporal API here, so it is unit-tested directly
 * (test/workflows/consent-refresh/refresh.test.ts); time is always passed in.
 */

export interface RefreshSettings {
  /** The merchant's expected banks (deduplicated): the refresh ends once all reported. */
  expected?: string[];
  /** Learned banks as given (deduplicated, sorted): carried in the result. */
  knownGiven?: string[];
  /** Learned banks that hold the quiet period open: only where the merchant named no banks. */
  known?: string[];
  /** Without expected banks the quiet period is the only way to end early; with them it applies only if asked for. */
  quietPeriod?: Duration;
  /** Bounds everything, PUT /refresh included. */
  timeout: Duration;
}

export function resolveRefreshSettings(input: ConsentRefreshInput): RefreshSettings {
  const expected =
    input.expectedBankCodes && input.expectedBankCodes.length > 0 ? [...new Set(input.expectedBankCodes)] : undefined;
  const knownGiven = input.knownBankCodes?.length ? [...new Set(input.knownBankCodes)].sort() : undefined;
  return {
    expected,
    knownGiven,
    known: expected ? undefined : knownGiven,
    quietPeriod: input.quietPeriod ?? (expected ? undefined : DEFAULT_REFRESH_QUIET_PERIOD),
    timeout: input.timeout ?? DEFAULT_REFRESH_TIMEOUT,
  };
}

/** What an accountEvent was taken as (the workflow logs the stale ones). */
export type AccountEventOutcome =
  /** Before PUT /refresh answered: kept until the task id is known. */
  | 'early'
  /** This task's first report of its bank. */
  | 'new-bank'
  | 'duplicate'
  /** Another task's: counted, and queued for the late workflow. */
  | 'stale'
  /** After the result was final: queued for the late workflow. */
  | 'after-close';

/** PUT /refresh's failure as the run reports it (the bank's reason, not the activity failure's generic message). */
export function notStartedMessage(err: unknown): string {
  if (isNotStarted(err)) return err.message;
  const reason = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
  return `PUT /refresh failed: ${reason}`;
}

/** The run's own REFRESH_NOT_STARTED failure (PUT /refresh did not answer within the timeout). */
export function isNotStarted(err: unknown): err is ApplicationFailure {
  return err instanceof ApplicationFailure && err.type === REFRESH_NOT_STARTED;
}

export class ConsentRefresh {
  readonly consentId: string;
  readonly settings: RefreshSettings;
  taskId: string | undefined;
  startFailure: string | undefined;
  /** The result is final: an event still arriving is a late report. */
  done = false;
  endedBy: RefreshEndReason | undefined;
  timedOut = false;
  staleEvents = 0;
  duplicateEvents = 0;
  /** Events this run cannot take, for the body to hand to the late workflow, oldest first. */
  readonly handOff: LateAccountEventSignalInput[] = [];
  handedOffEvents = 0;
  /** Workflow time (ms) of the last NEW bank; the quiet period runs from it. */
  lastNewBankAt: number | undefined;
  /** Events that came before PUT /refresh answered. */
  private readonly early: AccountEventSignalInput[] = [];
  private readonly banks = new Map<string, BankRefreshResult>();

  constructor(input: ConsentRefreshInput) {
    this.consentId = input.consentId;
    this.settings = resolveRefreshSettings(input);
  }

  /** The accountEvent handler: kept until the task id is known, then recorded. */
  receive(event: AccountEventSignalInput, nowMs: number): AccountEventOutcome {
    if (this.taskId === undefined) {
      this.early.push(event);
      return 'early';
    }
    return this.record(event, nowMs);
  }

  /** PUT /refresh answered: the events that came before are recorded now (returned with their outcome). */
  started(taskId: string, nowMs: number): { event: AccountEventSignalInput; outcome: AccountEventOutcome }[] {
    this.taskId = taskId;
    return this.early.splice(0).map((event) => ({ event, outcome: this.record(event, nowMs) }));
  }

  /** PUT /refresh failed: no task of ours exists, so what came meanwhile was another task's. */
  notStarted(message: string): void {
    this.startFailure = message;
    this.done = true;
    this.handOff.push(...this.early.splice(0).map((event) => ({ event, reason: 'other-task' as const })));
  }

  record(event: AccountEventSignalInput, nowMs: number): AccountEventOutcome {
    if (this.done) {
      this.handOff.push({ event, reason: 'refresh-closed' });
      return 'after-close';
    }
    if (event.taskId !== this.taskId) {
      this.staleEvents++;
      this.handOff.push({ event, reason: 'other-task' });
      return 'stale';
    }
    if (this.banks.has(event.bankCode)) {
      this.duplicateEvents++;
      return 'duplicate';
    }
    this.lastNewBankAt = nowMs;
    this.banks.set(event.bankCode, {
      bankCode: event.bankCode,
      bankName: event.bankName,
      taskStatus: event.taskStatus,
      succeeded: event.taskStatus === TASK_STATUS_FINISHED,
      accounts: event.accounts.map((a) => ({ accountId: a.accountId, eventType: a.eventType })),
      // Workflow time: the time of the workflow task that recorded the event (deterministic on replay).
      at: new Date(nowMs).toISOString(),
    });
    return 'new-bank';
  }

  /** How many banks reported this task (the fan-in wakes when it changes). */
  get reportedCount(): number {
    return this.banks.size;
  }

  reportedBankCodes(): string[] {
    return [...this.banks.keys()];
  }

  /** Expected (or, without them, learned) banks that have not reported. */
  missing(): string[] {
    const { expected, known } = this.settings;
    return (expected ?? known ?? []).filter((code) => !this.banks.has(code));
  }

  allExpectedReported(): boolean {
    return this.settings.expected !== undefined && this.missing().length === 0;
  }

  /** What nextFanInStep (fan-in.ts) decides on. */
  fanInView(quietRestartedAt: number | undefined): FanInView {
    const { expected, known, quietPeriod } = this.settings;
    return {
      expectedBankCodes: expected,
      knownBankCodes: known,
      reported: new Set(this.banks.keys()),
      timedOut: this.timedOut,
      quietPeriodMs: quietPeriod === undefined ? undefined : msToNumber(quietPeriod),
      lastNewBankAt: this.lastNewBankAt,
      quietRestartedAt,
    };
  }

  progress(): ConsentRefreshProgress {
    const { expected, knownGiven } = this.settings;
    return {
      consentId: this.consentId,
      taskId: this.taskId,
      done: this.done,
      banks: [...this.banks.values()],
      missing: this.missing(),
      ...(expected ? { expectedBankCodes: expected } : {}),
      staleEvents: this.staleEvents,
      duplicateEvents: this.duplicateEvents,
      ...(this.endedBy ? { endedBy: this.endedBy } : {}),
      ...(this.startFailure ? { error: this.startFailure } : {}),
      ...(knownGiven ? { knownBankCodes: knownGiven } : {}),
      handedOffEvents: this.handedOffEvents,
    };
  }

  /** The result, once the fan-in ended (endedBy set). */
  result(): ConsentRefreshResult {
    return { ...this.progress(), taskId: this.taskId!, done: true, endedBy: this.endedBy! };
  }
}
