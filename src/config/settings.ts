import type { CallbackAllowList } from '../security/callback-url';
import {
  DEFAULT_SERVICE_SETTINGS,
  DEFAULT_STATUS_ORDER,
  DEFAULT_TERMINAL_STATUSES,
  pollSettingsProblems,
  statusVocabulary,
  type ServiceSettings,
} from '../shared/application-settings';

/** A problem with the environment, naming the variable to change. */
export interface ConfigIssue {
  variable: string;
  message: string;
}

/** The variables of the settings of new workflows, as the schema parsed them (undefined: unset). */
export interface SettingsEnv {
  BANK_STATUS_ORDER?: string[];
  BANK_TERMINAL_STATUSES?: string[];
  POLL_FAST_INTERVAL?: number;
  POLL_RESPONSIVE_WINDOW?: number;
  POLL_BACKOFF_FACTOR?: number;
  POLL_SLOW_INTERVAL?: number;
  POLL_NO_WEBHOOK_INTERVAL?: number;
  APPLICATION_DEADLINE?: number;
  REFRESH_TIMEOUT?: number;
  REFRESH_QUIET_PERIOD?: number;
  TRANSACTION_EVENTS_WINDOW?: number;
}

/**
 * The one place the settings of new workflows are resolved from the environment: each variable set wins over the
 * built-in default (DEFAULT_SERVICE_SETTINGS). `problems` (the vocabulary's consistency and the poll intervals'
 * order, each naming its variable) are what the schema reports; `settings` is what the processes run with. A
 * merchant's request overrides some of them per workflow (applicationSettingsFor), on top of these.
 */
export function resolveServiceSettings(env: SettingsEnv): { settings: ServiceSettings; problems: ConfigIssue[] } {
  const d = DEFAULT_SERVICE_SETTINGS;
  const problems: ConfigIssue[] = [];
  const { vocabulary, problems: vocabularyProblems } = statusVocabulary(
    env.BANK_STATUS_ORDER ?? DEFAULT_STATUS_ORDER,
    env.BANK_TERMINAL_STATUSES ?? DEFAULT_TERMINAL_STATUSES,
  );
  for (const p of vocabularyProblems) {
    const variable = p.list === 'order' ? 'BANK_STATUS_ORDER' : 'BANK_TERMINAL_STATUSES';
    // A default list is never the culprit: name the one that was set.
    const setOne =
      env.BANK_STATUS_ORDER === undefined
        ? 'BANK_TERMINAL_STATUSES'
        : env.BANK_TERMINAL_STATUSES === undefined
          ? 'BANK_STATUS_ORDER'
          : variable;
    problems.push({ variable: setOne, message: p.message });
  }
  const applications = {
    fastPollIntervalMs: env.POLL_FAST_INTERVAL ?? d.applications.fastPollIntervalMs,
    responsiveWindowMs: env.POLL_RESPONSIVE_WINDOW ?? d.applications.responsiveWindowMs,
    pollBackoffFactor: env.POLL_BACKOFF_FACTOR ?? d.applications.pollBackoffFactor,
    slowPollIntervalMs: env.POLL_SLOW_INTERVAL ?? d.applications.slowPollIntervalMs,
    noWebhookPollIntervalMs: env.POLL_NO_WEBHOOK_INTERVAL ?? d.applications.noWebhookPollIntervalMs,
    deadlineMs: env.APPLICATION_DEADLINE ?? d.applications.deadlineMs,
  };
  for (const p of pollSettingsProblems(applications)) {
    const variable = p.field === 'slowPollIntervalMs' ? 'POLL_SLOW_INTERVAL' : 'POLL_NO_WEBHOOK_INTERVAL';
    problems.push({ variable, message: `${p.message}: see POLL_FAST_INTERVAL` });
  }
  return {
    settings: {
      applications: { ...applications, ...vocabulary },
      refresh: {
        timeoutMs: env.REFRESH_TIMEOUT ?? d.refresh.timeoutMs,
        quietPeriodMs: env.REFRESH_QUIET_PERIOD ?? d.refresh.quietPeriodMs,
      },
      transactionEvents: { coalesceWindowMs: env.TRANSACTION_EVENTS_WINDOW ?? d.transactionEvents.coalesceWindowMs },
    },
    problems,
  };
}

/** The allow-list in force: the configured origins; unset, loopback on the embedded stack and nothing otherwise. */
export function callbackAllowList(origins: string[] | undefined, embedded: boolean): CallbackAllowList {
  return { origins: origins ?? [], loopback: origins === undefined && embedded };
}
