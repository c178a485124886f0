import { UNKNOWN_AT_BANK_STATUS, type FinanceApplicationState } from '../../shared/finance-application';
import type { CallbackDelivery } from '../../shared/merchant-callbacks';
import { pollDelayMs, type PollPolicy } from '../../shared/poll-policy';
import { humanDuration, utcText } from '../../shared/time-words';

export { humanDuration };

/**
 * What the Temporal Web UI shows of one finance application: its current details (markdown) and the summary of each
 * timer in its history. Plain code with no clock (workflow time is passed in), unit-tested in
 * test/workflows/finance-application/details.test.ts; the workflow sets the details through reporting.ts.
 */

/** What the details are made from: the state, and what only the running workflow knows. */
export interface DetailsInput {
  state: FinanceApplicationState;
  policy: PollPolicy;
  /** Workflow time, ms. */
  now: number;
  /** Undefined when the application has no callback URL. */
  callbacks?: {
    /** What the callback being sent now is about (a status, `duplicate:<id>`); undefined when none is. */
    sending?: string;
    /** Callbacks waiting behind it. */
    queued: number;
  };
}

/** How a status was learned (StatusChange.source), in words. */
export const LEARNED_FROM: Record<string, string> = {
  create: "the bank's answer to the create",
  webhook: 'a webhook',
  poll: 'a poll',
};

/** An instant as the Web UI shows it (its text is shown as it is). */
const utc = (ms: number): string => utcText(ms);

/**
 * When the polling activity reads next, as its policy computes it (src/activities/index.ts pollApplicationStatus):
 * the interval for the time the status has been quiet, from now. An estimate (the activity reads the server's
 * clock at each attempt).
 */
export function nextPoll(
  state: FinanceApplicationState,
  policy: PollPolicy,
  now: number,
): { at: number; every: number } {
  const quietSince = Date.parse(state.quietSince ?? state.history.at(-1)?.at ?? new Date(now).toISOString());
  const every = pollDelayMs(policy, now - quietSince, state.webhooksLive || state.webhooksKnown === true);
  return { at: now + every, every };
}

/** The current details: the status now and how it was learned, the next poll, the callbacks, the timeline. */
export function currentDetails(input: DetailsInput): string {
  const s = input.state;
  const rows = s.history.slice(-20).map((h) => `| ${h.status} | ${h.at} | ${h.source} |`);
  return [
    headline(input),
    ...learnedLine(s),
    ...pollLine(input),
    ...callbackLine(input),
    `Application \`${s.financeApplicationId ?? '-'}\` · webhooks ${s.webhooksReceived} · reads ${s.statusReads}`,
    ...(s.duplicateApplicationIds?.length
      ? [
          '',
          `**Duplicate at the bank**: ${s.duplicateApplicationIds.map((id) => `\`${id}\``).join(', ')} ` +
            '(created by a retried create; not followed)',
        ]
      : []),
    ...(s.otherIds && s.otherIds.notFound + s.otherIds.unchecked > 0
      ? [
          '',
          `**Webhooks naming an unconfirmed application**: ${s.otherIds.notFound} unknown to the bank, ` +
            `${s.otherIds.unchecked} unchecked (${s.otherIds.reads} confirmation reads); counted, not reported`,
        ]
      : []),
    '',
    '| status | at | source |',
    '|---|---|---|',
    ...rows,
  ].join('\n');
}

function headline({ state: s, callbacks }: DetailsInput): string {
  if (s.done) {
    const sending = callbacks && (callbacks.sending !== undefined || callbacks.queued > 0);
    return `**${s.status ?? 'UNKNOWN'}**, finished (${s.outcome})${sending ? '; the last callbacks are still being sent' : ''}`;
  }
  if (s.unknownAtBank) {
    return (
      `**${UNKNOWN_AT_BANK_STATUS}** (last known ${s.status ?? 'none'}): the bank answers 404 since ` +
      `${s.unknownAtBank.since} (${s.unknownAtBank.reads} reads); slow polling`
    );
  }
  const mode = s.webhooksLive
    ? 'webhooks live, slow safety-net polling'
    : s.webhooksKnown
      ? 'webhooks reach us (other applications), slow safety-net polling'
      : 'polling with backoff until a webhook is seen';
  return `**${s.status ?? 'creating'}**, ${mode}`;
}

function learnedLine(s: FinanceApplicationState): string[] {
  const last = s.history.at(-1);
  if (!last) return [];
  return [`Learned from ${LEARNED_FROM[last.source] ?? last.source} at ${utc(Date.parse(last.at))}`];
}

function pollLine({ state: s, policy, now }: DetailsInput): string[] {
  if (s.done || !s.financeApplicationId) return [];
  const next = nextPoll(s, policy, now);
  return [
    `Next poll about ${utc(next.at)} (every ${humanDuration(next.every)} now; the polling activity's next attempt ` +
      'is the exact time)',
  ];
}

function callbackLine({ state: s, callbacks }: DetailsInput): string[] {
  if (!callbacks) return ['Callbacks: none (no callback URL)'];
  const parts: string[] = [];
  if (callbacks.sending !== undefined) {
    parts.push(
      `sending ${callbacks.sending} (retried until the merchant takes it or it is given up: ` +
        'its attempt and last failure are on the pending notifyMerchant activity)',
    );
  }
  if (callbacks.queued > 0) parts.push(`${callbacks.queued} queued`);
  const last = s.callbackDeliveries?.at(-1);
  if (last) parts.push(`last: ${deliveryWords(last)}`);
  parts.push(`${s.notificationsSent} delivered, ${s.notificationsFailed} given up`);
  return [`Callbacks: ${parts.join(' · ')}`];
}

/** One recorded delivery: `APPROVED delivered (HTTP 200, 1 attempt)`, `APPROVED gave up after 12 attempts (HTTP 503)`. */
export function deliveryWords(d: Pick<CallbackDelivery, 'about' | 'outcome' | 'httpStatus' | 'attempts'>): string {
  const attempts = d.attempts === undefined ? undefined : `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  const http = d.httpStatus === undefined ? undefined : `HTTP ${d.httpStatus}`;
  if (d.outcome === 'delivered') {
    const detail = [http, attempts].filter((x) => x !== undefined).join(', ');
    return `${d.about} delivered${detail ? ` (${detail})` : ''}`;
  }
  return `${d.about} gave up${attempts ? ` after ${attempts}` : ''}${http ? ` (${http})` : ''}`;
}

/** The summary of each timer the finance application starts: what the Web UI shows on TimerStarted. */
export const timerSummaries = {
  /** The run's one deadline timer (workflow.ts). */
  deadline: (deadlineAt: string, inMs: number): string =>
    `Deadline: stop following the application at ${deadlineAt} (in ${humanDuration(inMs)})`,
  /** The wait after a polling activity failed outright (workflow.ts). */
  pollAgainAfterFailure: (ms: number): string =>
    `Polling failed: start it again in ${humanDuration(ms)} (or at a webhook)`,
  /** A status wait's timeout (status-waits.ts: the facade's long-poll). */
  statusWait: (fromStatus: string, ms: number): string =>
    `Status wait: answer in ${humanDuration(ms)} unless ${fromStatus} changes first`,
};
