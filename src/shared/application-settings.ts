/**
 * Where the settings of new workflows come from, in one place: the operator's environment (src/config/schema.ts parses it
 * into ServiceSettings with the bounds below), then the merchant's per-request overrides (the facade's zod schemas
 * use the same bounds). Plain code, shared by the config, the facade and the tests (test/shared/application-settings.test.ts).
 */
import { FINANCE_APPLICATION_DEFAULTS, type FinanceApplicationSettings } from './finance-application';
import { FINANCE_APPLICATION_STATUSES, STATUS_NAME_PATTERN, TERMINAL_FINANCE_APPLICATION_STATUSES } from './bank-wire';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;

/** `"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"30d"`, or a whole number of milliseconds; undefined when unreadable. */
export function parseDurationMs(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const [, value, unit] = match;
  if (unit === undefined && value!.includes('.')) return undefined;
  return Math.round(Number(value) * UNIT_MS[(unit ?? 'ms') as keyof typeof UNIT_MS]);
}

/** Shortest readable form of a duration, for messages ("1h", "90s", "250ms"). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

export interface Bounds {
  min: number;
  max: number;
}

/**
 * Bounds of every setting, for the environment and for a request alike (durations in ms). Below the minimums a
 * poll would load the bank for little; above the maximums a change or an end would go unnoticed for too long.
 */
export const SETTING_BOUNDS = {
  fastPollIntervalMs: { min: 1_000, max: 3_600_000 },
  responsiveWindowMs: { min: 0, max: 86_400_000 },
  pollBackoffFactor: { min: 1, max: 10 },
  slowPollIntervalMs: { min: 1_000, max: 86_400_000 },
  noWebhookPollIntervalMs: { min: 1_000, max: 86_400_000 },
  deadlineMs: { min: 60_000, max: 365 * 86_400_000 },
  refreshTimeoutMs: { min: 1_000, max: 86_400_000 },
  refreshQuietPeriodMs: { min: 100, max: 86_400_000 },
  transactionEventsWindowMs: { min: 100, max: 3_600_000 },
} as const satisfies Record<string, Bounds>;

export { STATUS_NAME_PATTERN };

/** The bank's vocabulary as the workflow uses it. */
export interface StatusVocabulary {
  /** Rank of each status: non-terminal ones by position, every terminal one the last rank. */
  statusOrder: Record<string, number>;
  terminalStatuses: string[];
}

/** The sandbox's set (src/shared/bank-wire.ts): BANK_STATUS_ORDER's and BANK_TERMINAL_STATUSES' defaults. */
export const DEFAULT_STATUS_ORDER: readonly string[] = FINANCE_APPLICATION_STATUSES;
export const DEFAULT_TERMINAL_STATUSES: readonly string[] = TERMINAL_FINANCE_APPLICATION_STATUSES;

/**
 * BANK_STATUS_ORDER and BANK_TERMINAL_STATUSES as ranks. Rules (each broken one is a problem naming its list):
 * both non-empty; names match STATUS_NAME_PATTERN; no duplicates; every terminal status is in the order, and the
 * terminal ones come last (they share the last rank: a bank may end an application from any of them, none is
 * "further" than another). The order's other statuses rank by position, so a read of an earlier one is stale.
 */
export function statusVocabulary(
  order: readonly string[],
  terminal: readonly string[],
): { vocabulary: StatusVocabulary; problems: { list: 'order' | 'terminal'; message: string }[] } {
  const problems: { list: 'order' | 'terminal'; message: string }[] = [];
  if (order.length === 0) problems.push({ list: 'order', message: 'must list at least one status' });
  if (terminal.length === 0) problems.push({ list: 'terminal', message: 'must list at least one status' });
  for (const [list, names] of [
    ['order', order],
    ['terminal', terminal],
  ] as const) {
    const bad = names.filter((n) => !STATUS_NAME_PATTERN.test(n));
    if (bad.length > 0)
      problems.push({ list, message: `${bad.map((n) => `"${n}"`).join(', ')}: must match ${STATUS_NAME_PATTERN}` });
    const dup = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
    if (dup.length > 0) problems.push({ list, message: `lists ${dup.join(', ')} more than once` });
  }
  const missing = terminal.filter((n) => !order.includes(n));
  if (missing.length > 0)
    problems.push({ list: 'terminal', message: `${missing.join(', ')} not in BANK_STATUS_ORDER` });
  const firstTerminal = order.findIndex((n) => terminal.includes(n));
  const lateNonTerminal = firstTerminal < 0 ? [] : order.slice(firstTerminal).filter((n) => !terminal.includes(n));
  if (lateNonTerminal.length > 0)
    problems.push({
      list: 'order',
      message: `${lateNonTerminal.join(', ')} must come before the terminal statuses (${terminal.join(', ')}): they share the last rank`,
    });
  const nonTerminal = order.filter((n) => !terminal.includes(n));
  const statusOrder: Record<string, number> = {};
  nonTerminal.forEach((n, i) => (statusOrder[n] = i));
  for (const n of terminal) statusOrder[n] = nonTerminal.length;
  return { vocabulary: { statusOrder, terminalStatuses: [...terminal] }, problems };
}

/** The lifecycle settings every new application starts with (the environment's, else the defaults). */
export type ApplicationDefaults = Required<Omit<FinanceApplicationSettings, 'continueAsNewAfterEvents'>>;

/** What a merchant may override per application (the vocabulary is the bank's, so the operator's alone). */
export type ApplicationOverrides = Partial<
  Pick<
    ApplicationDefaults,
    | 'fastPollIntervalMs'
    | 'responsiveWindowMs'
    | 'pollBackoffFactor'
    | 'slowPollIntervalMs'
    | 'noWebhookPollIntervalMs'
    | 'deadlineMs'
  >
>;

/** The settings of workflows the service starts: from the environment (src/config/settings.ts). */
export interface ServiceSettings {
  applications: ApplicationDefaults;
  refresh: { timeoutMs: number; quietPeriodMs: number };
  transactionEvents: { coalesceWindowMs: number };
}

/** Built-in defaults: the settings with nothing in the environment. */
export const DEFAULT_SERVICE_SETTINGS: Readonly<ServiceSettings> = {
  applications: {
    ...FINANCE_APPLICATION_DEFAULTS,
    terminalStatuses: [...FINANCE_APPLICATION_DEFAULTS.terminalStatuses],
    statusOrder: { ...FINANCE_APPLICATION_DEFAULTS.statusOrder },
  },
  refresh: { timeoutMs: 10 * 60_000, quietPeriodMs: 30_000 },
  transactionEvents: { coalesceWindowMs: 2_000 },
};

/**
 * Problems of a combination of poll settings (each naming the field): the slowest intervals are caps of the
 * backoff, so none may be below the fast interval, and the no-webhook cap never above the slow one.
 */
export function pollSettingsProblems(
  s: ApplicationOverrides &
    Required<Pick<ApplicationOverrides, 'fastPollIntervalMs' | 'slowPollIntervalMs' | 'noWebhookPollIntervalMs'>>,
): {
  field: 'slowPollIntervalMs' | 'noWebhookPollIntervalMs';
  message: string;
}[] {
  const problems: { field: 'slowPollIntervalMs' | 'noWebhookPollIntervalMs'; message: string }[] = [];
  if (s.slowPollIntervalMs < s.fastPollIntervalMs)
    problems.push({
      field: 'slowPollIntervalMs',
      message: `must not be below the fast interval (${formatDuration(s.fastPollIntervalMs)})`,
    });
  if (s.noWebhookPollIntervalMs < s.fastPollIntervalMs)
    problems.push({
      field: 'noWebhookPollIntervalMs',
      message: `must not be below the fast interval (${formatDuration(s.fastPollIntervalMs)})`,
    });
  if (s.noWebhookPollIntervalMs > s.slowPollIntervalMs)
    problems.push({
      field: 'noWebhookPollIntervalMs',
      message: `must not be above the slow interval (${formatDuration(s.slowPollIntervalMs)})`,
    });
  return problems;
}

/**
 * The settings a new application starts with: the environment's defaults, then the merchant's overrides. Every
 * start of a finance application by this service goes through here. Throws SettingsError when the combination is
 * inconsistent (each override was within its bounds, checked by the caller's schema).
 */
export function applicationSettingsFor(
  defaults: ApplicationDefaults,
  overrides: ApplicationOverrides = {},
): FinanceApplicationSettings {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  const settings: ApplicationDefaults = {
    ...defaults,
    ...defined,
    terminalStatuses: [...defaults.terminalStatuses],
    statusOrder: { ...defaults.statusOrder },
  };
  const problems = pollSettingsProblems(settings);
  if (problems.length > 0) throw new SettingsError(problems);
  return settings;
}

/** Inconsistent settings in a request: the facade answers 400 with these. */
export class SettingsError extends Error {
  constructor(readonly problems: { field: string; message: string }[]) {
    super(problems.map((p) => `settings.${p.field} ${p.message}`).join('; '));
    this.name = 'SettingsError';
  }
}

/** The statuses of an application that goes well: each non-terminal one by rank, then the first terminal one. */
export function happyPath(vocabulary: StatusVocabulary): string[] {
  const nonTerminal = Object.entries(vocabulary.statusOrder)
    .filter(([name]) => !vocabulary.terminalStatuses.includes(name))
    .sort((a, b) => a[1] - b[1])
    .map(([name]) => name);
  return [...nonTerminal, ...vocabulary.terminalStatuses.slice(0, 1)];
}
