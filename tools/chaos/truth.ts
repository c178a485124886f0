import type { ApplicationRecord, RefreshTaskRecord, WebhookDelivery } from '../../src/sandbox/types';
import { FINANCE_APPLICATION_STATUS_ORDER, TERMINAL_FINANCE_APPLICATION_STATUSES } from '../../src/shared/bank-wire';
import { financeApplicationWorkflowId } from '../../src/shared/ids';

/**
 * The ground-truth comparison of a chaos run: the bank sandbox's record (applications with their status history
 * and webhook attempts, refresh tasks with their accountEvents, account webhooks) against what the product shows
 * through its public contract (the facade's answers and reads, the merchant's callbacks, the workflow state).
 * Pure: the scenario gathers both sides, this decides.
 *
 * - lost: something the bank has that we never finished or never recorded (or never told the merchant);
 * - wrong: a final status, history or refresh result that differs from the bank's record;
 * - ackLost: a webhook the bank saw answered 2xx whose information never reached a workflow's result.
 */
export type Category = 'lost' | 'wrong' | 'ackLost';

export interface Finding {
  category: Category;
  /** The application reference, consent or task it is about. */
  subject: string;
  /** What differs, with the evidence. */
  what: string;
}

export interface StatusChangeView {
  status: string;
  at: string;
  source?: string;
}

/** What the product shows of one application. */
export interface OurApplication {
  merchantReference: string;
  /** The financeApplicationId of the facade's 2xx answer to POST /applications; undefined when it never answered 2xx. */
  answeredId?: string;
  /** When its workflow closed (ISO; the last run's close); undefined while it runs. */
  closedAt?: string;
  /** GET /applications/:ref (with the workflow state's duplicateApplicationIds); undefined when 404. */
  state?: {
    financeApplicationId: string | null;
    status: string | null;
    done: boolean;
    history: StatusChangeView[];
    duplicateApplicationIds?: string[];
  };
}

export interface ApplicationFigures {
  references: number;
  bankApplications: number;
  /** References the facade never created (no 2xx answer, nothing at the bank). */
  notCreated: number;
  duplicatesCreated: number;
  duplicatesDetected: number;
  /** Duplicates not detected, by why (their webhooks all came after the workflow closed, or none was delivered). */
  duplicatesUndetected: Record<string, number>;
  /** Bank statuses never observed: passed between two reads (its webhook dropped or coalesced), not an error. */
  statusesSkipped: number;
  /** Statuses in the history of the applications our workflows follow (the creation's included). */
  statusesAtBank: number;
}

/** Idempotency keys of the merchant callbacks the product sends (src/workflows/finance-application/merchant-notification.ts). */
export const statusCallbackKey = (merchantId: string, ref: string, status: string): string =>
  `${financeApplicationWorkflowId(merchantId, ref)}:${status}`;
export const duplicateCallbackKey = (merchantId: string, ref: string, id: string): string =>
  `${financeApplicationWorkflowId(merchantId, ref)}:duplicate:${id}`;

const rank = (status: string | null | undefined): number =>
  status == null ? -1 : ((FINANCE_APPLICATION_STATUS_ORDER as Record<string, number>)[status] ?? -1);
const terminal = new Set<string>(TERMINAL_FINANCE_APPLICATION_STATUSES);

const answered = (d: WebhookDelivery, pred: (status: number) => boolean): boolean =>
  d.attempts.some((a) => a.status !== null && pred(a.status));
/** The receivers answer 202 when Temporal accepted the signal and 200 `ignored` when nobody took it. */
const accepted = (status: number) => status >= 200 && status < 300 && status !== 200;
const ignored = (status: number) => status === 200;

/**
 * Applications: `refs` are the references the harness created; `callbacks` the merchant they belong to and the
 * Idempotency-Keys its endpoint received (undefined: callbacks not checked).
 */
export function compareApplications(input: {
  bank: ApplicationRecord[];
  ours: OurApplication[];
  callbacks?: { merchantId: string; keys: ReadonlySet<string> };
}): { findings: Finding[]; figures: ApplicationFigures } {
  const findings: Finding[] = [];
  const add = (category: Category, subject: string, what: string) => findings.push({ category, subject, what });
  const { callbacks } = input;
  const figures: ApplicationFigures = {
    references: input.ours.length,
    bankApplications: input.bank.length,
    notCreated: 0,
    duplicatesCreated: 0,
    duplicatesDetected: 0,
    duplicatesUndetected: {},
    statusesSkipped: 0,
    statusesAtBank: 0,
  };
  const byRef = new Map<string, ApplicationRecord[]>();
  for (const app of input.bank) {
    const raw = app.createRequest.merchantReference;
    const ref = typeof raw === 'string' ? raw : '';
    byRef.set(ref, [...(byRef.get(ref) ?? []), app]);
  }
  const known = new Set(input.ours.map((o) => o.merchantReference));
  for (const [ref, apps] of byRef) {
    if (!known.has(ref)) add('lost', ref, `the bank has ${apps.length} application(s) for a reference nobody created`);
  }

  for (const our of input.ours) {
    const ref = our.merchantReference;
    const apps = byRef.get(ref) ?? [];
    const state = our.state;
    if (apps.length === 0) {
      if (our.answeredId !== undefined) {
        add('wrong', ref, `the facade answered ${our.answeredId}, the bank has no application for the reference`);
      } else if (state?.financeApplicationId) {
        add('wrong', ref, `the workflow follows ${state.financeApplicationId}, the bank has no application`);
      } else figures.notCreated += 1;
      continue;
    }
    if (!state) {
      add('lost', ref, `the bank has ${ids(apps)}, GET /applications/${ref} finds nothing`);
      continue;
    }
    const primary = apps.find((a) => a.financeApplicationId === state.financeApplicationId);
    if (!primary) {
      add('lost', ref, `the workflow follows ${state.financeApplicationId ?? 'nothing'}, the bank has ${ids(apps)}`);
      continue;
    }
    if (our.answeredId !== undefined && our.answeredId !== primary.financeApplicationId) {
      add('wrong', ref, `the facade answered ${our.answeredId}, the workflow follows ${primary.financeApplicationId}`);
    }
    if (!state.done) {
      if (terminal.has(primary.status)) {
        add('lost', ref, `never finished: we show ${state.status ?? 'no status'}, the bank ${primary.status}`);
      }
    } else if (state.status !== primary.status) {
      add('wrong', ref, `final status ${state.status ?? 'none'}, the bank's ${primary.status}`);
    }
    figures.statusesSkipped += compareHistory(ref, state.history, primary, add);
    figures.statusesAtBank += primary.statusHistory.length;

    // 200 `ignored` is only for a finished application: one answered while the workflow ran never reached it.
    for (const d of primary.webhooks) {
      const status = d.trigger.startsWith('status:') ? d.trigger.slice('status:'.length) : undefined;
      const early = ignoredWhileOpen(d, our.closedAt);
      if (early) {
        add('ackLost', ref, `webhook (${d.trigger}) answered 200 ignored at ${early}, the workflow ${closed(our)}`);
      } else if (status && answered(d, ignored) && rank(status) > rank(state.status)) {
        add('ackLost', ref, `webhook for ${status} answered 200 ignored; we show ${state.status ?? 'no status'}`);
      }
    }

    const detected = new Set(state.duplicateApplicationIds ?? []);
    for (const other of apps.filter((a) => a !== primary)) {
      figures.duplicatesCreated += 1;
      const id = other.financeApplicationId;
      if (detected.has(id)) {
        figures.duplicatesDetected += 1;
        if (callbacks && !callbacks.keys.has(duplicateCallbackKey(callbacks.merchantId, ref, id))) {
          add('lost', ref, `duplicate ${id} detected but never reported to the merchant's callback`);
        }
        continue;
      }
      const early = other.webhooks.map((d) => ignoredWhileOpen(d, our.closedAt)).find((at) => at !== undefined);
      if (other.webhooks.some((d) => answered(d, accepted))) {
        add('ackLost', ref, `a webhook of duplicate ${id} was answered 202, the workflow never recorded it`);
      } else if (early) {
        add(
          'ackLost',
          ref,
          `a webhook of duplicate ${id} was answered 200 ignored at ${early}, the workflow ${closed(our)}`,
        );
      } else {
        const why = other.webhooks.some((d) => answered(d, ignored))
          ? 'webhooks only after the workflow closed'
          : 'no webhook delivered';
        figures.duplicatesUndetected[why] = (figures.duplicatesUndetected[why] ?? 0) + 1;
      }
    }
    for (const id of detected) {
      if (!apps.some((a) => a.financeApplicationId === id && a !== primary)) {
        add('wrong', ref, `reports duplicate ${id}, which the bank does not hold for this reference`);
      }
    }
    if (callbacks) {
      const missing = state.history.filter(
        (h) => !callbacks.keys.has(statusCallbackKey(callbacks.merchantId, ref, h.status)),
      );
      if (missing.length > 0) {
        add('lost', ref, `merchant callback never received for ${missing.map((h) => h.status).join(', ')}`);
      }
    }
  }
  return { findings, figures };
}

/**
 * Our history must be the bank's, in order, with statuses possibly skipped (the status endpoint shows only the
 * current one), each learned no earlier than the bank made it. Returns how many bank statuses were skipped.
 */
function compareHistory(
  ref: string,
  history: StatusChangeView[],
  bank: ApplicationRecord,
  add: (category: Category, subject: string, what: string) => void,
): number {
  let j = -1;
  let matched = 0;
  for (const h of history) {
    const k = bank.statusHistory.findIndex((b, i) => i > j && b.status === h.status);
    if (k < 0) {
      add('wrong', ref, `history ${seq(history)} is not the bank's ${seq(bank.statusHistory)} (at ${h.status})`);
      return 0;
    }
    const bankAt = Date.parse(bank.statusHistory[k]!.at);
    // Both clocks are this machine's; ISO strings carry milliseconds.
    if (Date.parse(h.at) + 1 < bankAt) {
      add(
        'wrong',
        ref,
        `recorded ${h.status} at ${h.at}, before the bank changed to it at ${bank.statusHistory[k]!.at}`,
      );
    }
    j = k;
    matched += 1;
  }
  return bank.statusHistory.length - matched;
}

/**
 * How long before a workflow's close an attempt answered 200 `ignored` may have started and still have raced the
 * close: the receiver's signal deadline (4 s, its retries included) and a margin. Earlier ones were refused while
 * the workflow ran.
 */
export const CLOSE_RACE_MS = 4_500;

/** The start of an attempt answered 200 `ignored` while the workflow was still open, or undefined. */
function ignoredWhileOpen(d: WebhookDelivery, closedAt: string | undefined): string | undefined {
  const close = closedAt === undefined ? Infinity : Date.parse(closedAt) - CLOSE_RACE_MS;
  return d.attempts.find((a) => a.status === 200 && Date.parse(a.at) < close)?.at;
}

const closed = (our: OurApplication) => (our.closedAt ? `closed at ${our.closedAt}` : 'still runs');

const ids = (apps: ApplicationRecord[]) => apps.map((a) => a.financeApplicationId).join(', ');
const seq = (h: { status: string }[]) => h.map((x) => x.status).join('→');

// ---------------------------------------------------------------------------------------------------------------
// Refreshes
// ---------------------------------------------------------------------------------------------------------------

/** One bank as a refresh result shows it (GET /consents/:id/refresh `banks[]`, or a late report). */
export interface BankView {
  bankCode: string;
  taskStatus?: string;
  accounts?: { accountId: string; eventType?: string }[];
  late?: boolean;
}

/** GET /consents/:id/refresh as read; fields of later versions (late reports) are read when present. */
export interface RefreshView {
  taskId: string | null;
  done: boolean;
  banks: BankView[];
  /** Late bank reports, when the product lists them apart (an array of banks); a count or absent is ignored. */
  lateReports?: unknown;
  missing?: string[];
  endedBy?: string;
}

export interface OurRefreshRun {
  consentId: string;
  /** 1-based refresh of this consent in the run. */
  run: number;
  /** When the harness first asked for it (ISO). */
  requestedAt: string;
  /** The taskId of the facade's 202; undefined when it never answered 202. */
  taskId?: string;
  /** The result as last read (the latest refresh's, read before the consent's next refresh started). */
  view?: RefreshView;
}

export interface RefreshFigures {
  runs: number;
  /** Runs the facade never answered 202 for (the merchant gave up retrying). */
  notStarted: number;
  bankTasks: number;
  /** Bank tasks superseded by a retried PUT /refresh (the bank acted, its answer was lost): followed by the retry. */
  supersededTasks: number;
  banks: number;
  /** Banks shown in the result (in time, or as late reports). */
  shown: number;
  shownLate: number;
  /** Banks whose accountEvent never reached us (dropped at the bank, never sent, or every attempt failed). */
  neverDelivered: number;
  /** Results ended by each reason. */
  endedBy: Record<string, number>;
}

/** The banks a view shows: `banks[]` (with `late` when flagged) and, when it is an array, `lateReports[]`. */
export function shownBanks(view: RefreshView): Map<string, BankView> {
  const shown = new Map<string, BankView>();
  for (const b of view.banks ?? []) shown.set(b.bankCode, b);
  if (Array.isArray(view.lateReports)) {
    for (const item of view.lateReports as unknown[]) {
      if (item && typeof item === 'object' && typeof (item as BankView).bankCode === 'string') {
        const b = item as BankView;
        if (!shown.has(b.bankCode)) shown.set(b.bankCode, { ...b, late: true });
      }
    }
  }
  return shown;
}

/**
 * Refreshes: every bank task is one of our runs (or superseded by the retry of its PUT /refresh), every run
 * finished, and each run's result shows every bank that reported (answered 2xx) with what it sent.
 * `recordedTaskIds`: task ids some consent-refresh workflow recorded (visibility's RefreshTaskId), for tasks the
 * harness did not get an answer for.
 */
export function compareRefreshes(input: {
  tasks: RefreshTaskRecord[];
  runs: OurRefreshRun[];
  recordedTaskIds?: ReadonlySet<string>;
}): { findings: Finding[]; figures: RefreshFigures } {
  const findings: Finding[] = [];
  const add = (category: Category, subject: string, what: string) => findings.push({ category, subject, what });
  const figures: RefreshFigures = {
    runs: input.runs.length,
    notStarted: 0,
    bankTasks: input.tasks.length,
    supersededTasks: 0,
    banks: 0,
    shown: 0,
    shownLate: 0,
    neverDelivered: 0,
    endedBy: {},
  };
  const taskById = new Map(input.tasks.map((t) => [t.taskId, t]));
  const runByTask = new Map(input.runs.filter((r) => r.taskId).map((r) => [r.taskId!, r]));

  for (const run of input.runs) {
    const subject = `${run.consentId}#${run.run}`;
    if (!run.taskId) {
      // Not a loss by itself: a task the bank started for it is one no run follows, flagged below.
      figures.notStarted += 1;
      continue;
    }
    const task = taskById.get(run.taskId);
    if (!task) {
      add('wrong', subject, `taskId ${run.taskId} is not a task of the bank`);
      continue;
    }
    if (!run.view || !run.view.done) {
      add('lost', subject, `task ${run.taskId}: never finished (${run.view ? 'still running' : 'never read'})`);
      continue;
    }
    if (run.view.taskId !== run.taskId) {
      add('wrong', subject, `the result is of task ${run.view.taskId ?? 'none'}, the facade answered ${run.taskId}`);
      continue;
    }
    const endedBy = run.view.endedBy ?? 'unknown';
    figures.endedBy[endedBy] = (figures.endedBy[endedBy] ?? 0) + 1;
    compareBanks(subject, task, run.view, add, figures);
  }

  for (const task of input.tasks) {
    if (runByTask.has(task.taskId) || input.recordedTaskIds?.has(task.taskId)) continue;
    const requested = Date.parse(task.requestedAt);
    // A PUT /refresh the bank acted on whose answer was lost (a 5xx after acting, a worker killed mid-call): the
    // activity's retry started the task our run follows.
    const superseded = input.runs.some((r) => {
      const followed = r.taskId ? taskById.get(r.taskId) : undefined;
      return (
        r.consentId === task.consentId &&
        followed !== undefined &&
        Date.parse(r.requestedAt) <= requested &&
        Date.parse(followed.requestedAt) > requested
      );
    });
    if (superseded) figures.supersededTasks += 1;
    else
      add('lost', `${task.consentId}`, `bank task ${task.taskId} (requested ${task.requestedAt}) was never recorded`);
  }
  return { findings, figures };
}

function compareBanks(
  subject: string,
  task: RefreshTaskRecord,
  view: RefreshView,
  add: (category: Category, subject: string, what: string) => void,
  figures: RefreshFigures,
): void {
  const shown = shownBanks(view);
  const context = `task ${task.taskId}, ended by ${view.endedBy ?? '?'}, result [${[...shown.keys()].join(', ')}]`;
  for (const bank of task.banks) {
    figures.banks += 1;
    const copies = task.events.filter((e) => e.body.bankCode === bank.bankCode);
    const b = shown.get(bank.bankCode);
    if (b) {
      figures.shown += 1;
      if (b.late) figures.shownLate += 1;
      const sent = copies[0]?.body as
        { taskStatus?: string; accounts?: { accountId: string; eventType?: string }[] } | undefined;
      if (!sent || !copies.some((d) => d.attempts.length > 0)) {
        add('wrong', subject, `shows ${bank.bankCode}, whose event the bank never sent (${context})`);
        continue;
      }
      if (b.taskStatus !== undefined && b.taskStatus !== sent.taskStatus) {
        add('wrong', subject, `${bank.bankCode} taskStatus ${b.taskStatus}, the bank sent ${sent.taskStatus}`);
      }
      if (b.accounts !== undefined && accountsKey(b.accounts) !== accountsKey(sent.accounts ?? [])) {
        add(
          'wrong',
          subject,
          `${bank.bankCode} accounts ${accountsKey(b.accounts)}, the bank sent ${accountsKey(sent.accounts ?? [])}`,
        );
      }
      continue;
    }
    if (copies.some((d) => answered(d, accepted))) {
      add(
        'wrong',
        subject,
        `${bank.bankCode} reported (answered ${answers(copies)}), missing from the result (${context})`,
      );
    } else if (copies.some((d) => answered(d, ignored))) {
      add('ackLost', subject, `${bank.bankCode}'s accountEvent answered ${answers(copies)}, missing (${context})`);
    } else figures.neverDelivered += 1;
  }
  for (const code of shown.keys()) {
    if (!task.banks.some((b) => b.bankCode === code)) add('wrong', subject, `shows ${code}, not a bank of ${context}`);
  }
}

const accountsKey = (accounts: { accountId: string; eventType?: string }[]) =>
  accounts
    .map((a) => `${a.accountId}:${a.eventType ?? ''}`)
    .sort()
    .join(',');

/** The answers of a webhook's copies, e.g. "503,503,200". */
const answers = (copies: WebhookDelivery[]) =>
  copies.map((d) => d.attempts.map((a) => a.status ?? (a.error ? 'timeout' : '-')).join(',')).join(' | ');

// ---------------------------------------------------------------------------------------------------------------
// transactionEvents
// ---------------------------------------------------------------------------------------------------------------

/** One batch the merchant's TRANSACTIONS_CALLBACK_URL received (deduplicated by Idempotency-Key). */
export interface TransactionBatch {
  key: string;
  consentId: string;
  events: number;
  accounts: string[];
}

/**
 * Every transactionEvent answered 202 reaches the merchant in a batch: per consent, the batches count at least as
 * many events as copies answered 2xx, and their accounts cover every account those events named.
 */
export function compareTransactions(input: { deliveries: WebhookDelivery[]; batches: TransactionBatch[] }): {
  findings: Finding[];
  figures: { eventsAcknowledged: number; eventsDelivered: number; batches: number };
} {
  const findings: Finding[] = [];
  const acked = new Map<string, { copies: number; accounts: Set<string> }>();
  for (const d of input.deliveries) {
    if (d.kind !== 'transactionEvent' || !answered(d, (s) => s >= 200 && s < 300)) continue;
    const consentId = String(d.body.consentId);
    const entry = acked.get(consentId) ?? { copies: 0, accounts: new Set<string>() };
    entry.copies += 1;
    for (const a of (d.body.accounts as { accountId: string }[] | undefined) ?? []) entry.accounts.add(a.accountId);
    acked.set(consentId, entry);
  }
  const unique = new Map(input.batches.map((b) => [b.key, b]));
  let delivered = 0;
  for (const [consentId, entry] of acked) {
    const batches = [...unique.values()].filter((b) => b.consentId === consentId);
    const events = batches.reduce((n, b) => n + b.events, 0);
    delivered += events;
    const accounts = new Set(batches.flatMap((b) => b.accounts));
    const missing = [...entry.accounts].filter((a) => !accounts.has(a));
    if (events < entry.copies || missing.length > 0) {
      findings.push({
        category: 'ackLost',
        subject: consentId,
        what:
          `${entry.copies} transactionEvent(s) answered 2xx, the merchant received ${events} in ${batches.length} ` +
          `batch(es)${missing.length ? `, never accounts ${missing.join(', ')}` : ''}`,
      });
    }
  }
  return {
    findings,
    figures: {
      eventsAcknowledged: [...acked.values()].reduce((n, e) => n + e.copies, 0),
      eventsDelivered: delivered,
      batches: unique.size,
    },
  };
}

/** Findings counted by category. */
export function countFindings(findings: Finding[]): Record<Category, number> {
  const counts: Record<Category, number> = { lost: 0, wrong: 0, ackLost: 0 };
  for (const f of findings) counts[f.category] += 1;
  return counts;
}
