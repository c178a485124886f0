import type { ApiFault, ApplicationScript, ConsentSetup } from '../../src/sandbox/types';
import { BANK_POOL } from '../../src/sandbox/consents';
import { seededRng, type Rng } from './prng';

/**
 * The seeded fault plan of one chaos run: pure data from (seed, sizes), so a run can be repeated and the plan
 * unit-tested. The scenario (scenario.ts) plays it against the real processes; timing on a loaded machine
 * still varies, the plan does not.
 */

export interface ChaosSizes {
  /** Finance applications created through the facade. */
  applications: number;
  /** Consent refreshes in all (about a fifth are second refreshes of a consent). */
  refreshes: number;
  /** How long faults are injected and load is started (ms). */
  durationMs: number;
  /** Worker processes (each killed in turn). */
  workers: number;
  /** API processes (facade calls and webhooks are spread over them). */
  apis: number;
  /** Temporal restarts; undefined: 1 or 2, from the seed. */
  temporalRestarts?: number;
}

export const DEFAULT_SIZES: ChaosSizes = { applications: 100, refreshes: 20, durationMs: 120_000, workers: 2, apis: 2 };

/** The rates the plan aims at (docs/testing.md, "Chaos test"). */
export const RATES = {
  /** Finance webhooks dropped by the bank (per status change). */
  dropWebhook: 0.3,
  /** Applications whose webhooks the bank delivers twice (or three times). */
  duplicateWebhooks: 0.2,
  /** Applications whose webhooks are held for seconds. */
  delayWebhooks: 0.1,
  /** Applications whose webhooks arrive newest first after the last step. */
  reorderWebhooks: 0.05,
  /** Refresh runs whose banks send each accountEvent twice. */
  duplicateAccountEvents: 0.2,
  /** Banks whose accountEvent is never sent (dropped at the bank). */
  bankNeverAnswers: 0.1,
  /** Banks whose accountEvent comes after the refresh can have closed (quiet period or timeout). */
  bankLate: 0.15,
  /** Banks that report taskStatus FAILED. */
  bankFailed: 0.1,
  /** Refresh runs whose first event reaches us before PUT /refresh answered. */
  eventBeforeResponse: 0.1,
  /** Share of refresh runs that are a consent's second refresh (no expectedBankCodes: the learned set). */
  secondRefresh: 0.2,
  /** Mean time between worker kills (ms). */
  workerKillEveryMs: 20_000,
  /** Bank API fault injections per application or refresh (each fails 1–4 calls): about 5 % of the calls. */
  apiFaultsPerItem: 0.08,
} as const;

export interface ApplicationPlan {
  merchantReference: string;
  /** When the harness POSTs it (ms from the start of the load phase). */
  atMs: number;
  /** Which API process's facade the harness calls. */
  api: number;
  /** The bank's lifecycle of this application (sandbox script, matched by merchantReference). */
  script: ApplicationScript;
}

/** The merchant's request body of POST /consents/:id/refresh. */
export interface RefreshRequest {
  expectedBankCodes?: string[];
  timeout: number;
  quietPeriod?: number;
}

export interface RefreshRunPlan {
  /** The bank's behaviour for this run (PUT /_sandbox/consents/:id before the refresh). */
  setup: ConsentSetup & { banks: NonNullable<ConsentSetup['banks']> };
  request: RefreshRequest;
  /** Banks whose event is planned after the refresh can have closed. */
  lateBanks: string[];
}

export interface ConsentPlan {
  consentId: string;
  /** First refresh (ms from the start of the load phase); a second one follows once the first has settled. */
  atMs: number;
  api: number;
  runs: RefreshRunPlan[];
}

export type TimedFault =
  | { atMs: number; kind: 'kill-worker'; worker: number; downMs: number }
  | { atMs: number; kind: 'restart-temporal'; signal: 'SIGTERM' | 'SIGKILL'; downMs: number }
  | { atMs: number; kind: 'api-fault'; fault: ApiFault }
  | { atMs: number; kind: 'transaction-burst'; consentId: string; count: number; withinMs: number };

export interface FaultPlan {
  seed: number;
  sizes: ChaosSizes;
  applications: ApplicationPlan[];
  consents: ConsentPlan[];
  /** Sorted by atMs. */
  faults: TimedFault[];
}

const LIFECYCLES: readonly { weight: number; steps: string[] }[] = [
  { weight: 60, steps: ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'] },
  { weight: 15, steps: ['IN_PROGRESS', 'DECLINED'] },
  { weight: 10, steps: ['IN_PROGRESS', 'APPROVED', 'CANCELLED'] },
  { weight: 10, steps: ['IN_PROGRESS', 'EXPIRED'] },
  { weight: 5, steps: ['EXPIRED'] },
];

/** The sandbox's pool of other banks, in bank-code order (the order the seeded shuffles were drawn from). */
const BANKS = [...BANK_POOL].sort((a, b) => a.bankCode.localeCompare(b.bankCode));

/** Refresh bounds of the plan: short enough for a run of minutes, long enough for the bank's normal delays. */
export const REFRESH_TIMING = {
  /** timeout of a refresh that names its banks (ends at all-reported or here). */
  expectedTimeoutMs: 20_000,
  /** quietPeriod and timeout of a refresh without bank codes. */
  quietPeriodMs: 4_000,
  quietTimeoutMs: 30_000,
  /** A bank's normal delay after PUT /refresh. */
  normalDelayMs: [300, 3_500] as const,
  /** How far past the close a late bank's event comes. */
  lateByMs: [2_000, 6_000] as const,
};

export function makeFaultPlan(seed: number, sizes: ChaosSizes = DEFAULT_SIZES): FaultPlan {
  const rng = seededRng(seed);
  return {
    seed,
    sizes,
    applications: planApplications(rng.fork('applications'), seed, sizes),
    consents: planConsents(rng.fork('consents'), seed, sizes),
    faults: planFaults(rng.fork('faults'), seed, sizes).sort((a, b) => a.atMs - b.atMs),
  };
}

function planApplications(rng: Rng, seed: number, sizes: ChaosSizes): ApplicationPlan[] {
  const lastStart = Math.round(sizes.durationMs * 0.85);
  const apps: ApplicationPlan[] = [];
  for (let i = 0; i < sizes.applications; i++) {
    const lifecycle = weighted(rng, LIFECYCLES);
    const webhooks: NonNullable<ApplicationScript['webhooks']> = {};
    if (rng.chance(RATES.duplicateWebhooks)) webhooks.duplicate = rng.chance(0.25) ? 3 : 2;
    if (rng.chance(RATES.delayWebhooks)) webhooks.delayMs = rng.int(1_000, 8_000);
    if (rng.chance(RATES.reorderWebhooks)) webhooks.reorder = true;
    apps.push({
      merchantReference: `chaos-${seed}-app-${i}`,
      atMs: rng.int(0, lastStart),
      api: i % Math.max(1, sizes.apis),
      script: {
        steps: lifecycle.steps.map((status) => ({
          status,
          afterMs: rng.int(400, 2_500),
          ...(rng.chance(RATES.dropWebhook) ? { dropWebhook: true } : {}),
        })),
        // drop: false explicitly, so a per-run drop switch never overrides the plan's per-step drops.
        webhooks: { drop: false, ...webhooks },
      },
    });
  }
  return apps.sort((a, b) => a.atMs - b.atMs);
}

function planConsents(rng: Rng, seed: number, sizes: ChaosSizes): ConsentPlan[] {
  if (sizes.refreshes <= 0) return [];
  const consentCount = Math.max(1, Math.round(sizes.refreshes * (1 - RATES.secondRefresh)));
  const seconds = sizes.refreshes - consentCount;
  const lastStart = Math.round(sizes.durationMs * 0.6);
  const consents: ConsentPlan[] = [];
  for (let i = 0; i < consentCount; i++) {
    const banks = shuffled(rng, BANKS)
      .slice(0, rng.int(2, 4))
      .map(({ bankCode, bankName }) => ({
        bankCode,
        bankName,
        accounts: Array.from({ length: rng.int(1, 3) }, (_, k) => `${bankCode}-${seed}-${i}-${k}`),
      }));
    const runs = [planRun(rng, banks, rng.chance(0.5) ? 'expected' : 'quiet')];
    // The first consents get a second refresh: without bank codes, so the learned set is what keeps it open.
    if (i < seconds) runs.push(planRun(rng, banks, 'quiet'));
    consents.push({ consentId: `chaos-${seed}-consent-${i}`, atMs: rng.int(0, lastStart), api: i % sizes.apis, runs });
  }
  return consents.sort((a, b) => a.atMs - b.atMs);
}

function planRun(
  rng: Rng,
  banks: { bankCode: string; bankName: string; accounts: string[] }[],
  mode: 'expected' | 'quiet',
): RefreshRunPlan {
  const t = REFRESH_TIMING;
  const planned = banks.map((bank) => ({
    ...bank,
    neverAnswers: rng.chance(RATES.bankNeverAnswers),
    late: rng.chance(RATES.bankLate),
    failed: rng.chance(RATES.bankFailed),
    delayMs: rng.int(t.normalDelayMs[0], t.normalDelayMs[1]),
  }));
  const onTime = planned.filter((b) => !b.late && !b.neverAnswers);
  // The close the late banks miss: the timeout when banks are named, else the quiet period after the last on-time one.
  const closesAt =
    mode === 'expected' ? t.expectedTimeoutMs : Math.max(0, ...onTime.map((b) => b.delayMs)) + t.quietPeriodMs;
  for (const bank of planned) {
    if (bank.late) bank.delayMs = closesAt + rng.int(t.lateByMs[0], t.lateByMs[1]);
  }
  const setup: RefreshRunPlan['setup'] = {
    banks: planned.map((b) => ({
      bankCode: b.bankCode,
      bankName: b.bankName,
      accounts: b.accounts,
      delayMs: b.delayMs,
      ...(b.neverAnswers ? { neverAnswers: true } : {}),
      ...(b.failed ? { taskStatus: 'FAILED' } : {}),
    })),
    ...(rng.chance(RATES.duplicateAccountEvents) ? { duplicateEvents: 2 } : {}),
    ...(rng.chance(RATES.eventBeforeResponse) ? { eventBeforeResponse: true } : {}),
  };
  const request: RefreshRequest =
    mode === 'expected'
      ? { expectedBankCodes: banks.map((b) => b.bankCode), timeout: t.expectedTimeoutMs }
      : { quietPeriod: t.quietPeriodMs, timeout: t.quietTimeoutMs };
  return { setup, request, lateBanks: planned.filter((b) => b.late && !b.neverAnswers).map((b) => b.bankCode) };
}

function planFaults(rng: Rng, seed: number, sizes: ChaosSizes): TimedFault[] {
  const faults: TimedFault[] = [];
  const d = sizes.durationMs;

  // Worker kills: about every 20 s, a worker in turn from a random one, SIGKILL, back after 1–3 s.
  if (sizes.workers > 0) {
    let worker = rng.int(0, sizes.workers - 1);
    for (let at = rng.int(8_000, 16_000); at < d; at += rng.int(15_000, 25_000)) {
      faults.push({ atMs: at, kind: 'kill-worker', worker, downMs: rng.int(1_000, 3_000) });
      worker = (worker + 1) % sizes.workers;
    }
  }

  // Temporal restarts: 1 or 2, each in its own slot of the run's middle (the scenario never overlaps them).
  const restarts = sizes.temporalRestarts ?? (rng.chance(0.5) ? 2 : 1);
  const window: [number, number] = [Math.round(d * 0.15), Math.round(d * 0.8)];
  const slot = (window[1] - window[0]) / Math.max(1, restarts);
  for (let i = 0; i < restarts; i++) {
    const from = window[0] + i * slot;
    faults.push({
      atMs: Math.round(from + rng.next() * slot * 0.5),
      kind: 'restart-temporal',
      signal: rng.chance(0.5) ? 'SIGTERM' : 'SIGKILL',
      downMs: rng.int(2_000, 6_000),
    });
  }

  // Bank API faults, queued at the bank and consumed by the next matching calls; as many as the load makes calls.
  const injections = Math.max(2, Math.round((sizes.applications + sizes.refreshes) * RATES.apiFaultsPerItem));
  for (let i = 0; i < injections; i++) {
    const atMs = rng.int(Math.round(d * 0.02), Math.round(d * 0.95));
    faults.push({ atMs, kind: 'api-fault', fault: weighted(rng, apiFaultMenu(rng)).fault });
  }

  // transactionEvent bursts on the consents of the plan.
  const consentCount = sizes.refreshes > 0 ? Math.max(1, Math.round(sizes.refreshes * (1 - RATES.secondRefresh))) : 0;
  const bursts = consentCount > 0 ? Math.max(1, Math.round(consentCount / 4)) : 0;
  for (let i = 0; i < bursts; i++) {
    faults.push({
      atMs: rng.int(Math.round(d * 0.1), Math.round(d * 0.9)),
      kind: 'transaction-burst',
      consentId: `chaos-${seed}-consent-${rng.int(0, consentCount - 1)}`,
      count: rng.int(3, 15),
      withinMs: rng.int(0, 3_000),
    });
  }
  return faults;
}

/** What an API fault injection can be; weights give about 5 % of calls failed and a few ambiguous creates. */
function apiFaultMenu(rng: Rng): { weight: number; fault: ApiFault }[] {
  return [
    { weight: 30, fault: { route: 'getStatus', kind: '5xx', count: rng.int(1, 4) } },
    { weight: 15, fault: { route: 'getStatus', kind: '429', retryAfterSeconds: 1, count: rng.int(1, 3) } },
    { weight: 12, fault: { route: 'createApplication', kind: '5xx', status: 500, afterActing: true, count: 1 } },
    {
      weight: 5,
      fault: { route: 'createApplication', kind: '429', retryAfterSeconds: 1, afterActing: true, count: 1 },
    },
    { weight: 10, fault: { route: 'createApplication', kind: '5xx', count: 1 } },
    { weight: 8, fault: { route: 'refresh', kind: '5xx', count: 1 } },
    { weight: 4, fault: { route: 'refresh', kind: '5xx', status: 500, afterActing: true, count: 1 } },
    { weight: 6, fault: { route: '*', kind: '429', retryAfterSeconds: 1, count: rng.int(1, 3) } },
    { weight: 4, fault: { route: 'token', kind: '5xx', count: 1 } },
    { weight: 6, fault: { route: 'getStatus', kind: 'latency', latencyMs: rng.int(500, 3_000), count: rng.int(1, 5) } },
  ];
}

function weighted<T extends { weight: number }>(rng: Rng, items: readonly T[]): T {
  const total = items.reduce((sum, item) => sum + item.weight, 0);
  let r = rng.next() * total;
  for (const item of items) {
    r -= item.weight;
    if (r < 0) return item;
  }
  return items[items.length - 1]!;
}

function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** What the plan will do, counted (printed before a run, and checked by the plan's tests). */
export function describePlan(plan: FaultPlan): {
  workerKills: number;
  temporalRestarts: number;
  apiFaults: number;
  ambiguousCreates: number;
  transactionBursts: number;
  statusChanges: number;
  droppedWebhooks: number;
  refreshRuns: number;
  secondRefreshes: number;
  lateBanks: number;
  silentBanks: number;
} {
  const count = (kind: TimedFault['kind']) => plan.faults.filter((f) => f.kind === kind).length;
  const steps = plan.applications.flatMap((a) => a.script.steps);
  const runs = plan.consents.flatMap((c) => c.runs);
  return {
    workerKills: count('kill-worker'),
    temporalRestarts: count('restart-temporal'),
    apiFaults: count('api-fault'),
    ambiguousCreates: plan.faults.filter(
      (f) => f.kind === 'api-fault' && f.fault.route === 'createApplication' && f.fault.afterActing,
    ).length,
    transactionBursts: count('transaction-burst'),
    statusChanges: steps.length,
    droppedWebhooks: steps.filter((s) => s.dropWebhook).length,
    refreshRuns: runs.length,
    secondRefreshes: plan.consents.filter((c) => c.runs.length > 1).length,
    lateBanks: runs.reduce((n, r) => n + r.lateBanks.length, 0),
    silentBanks: runs.reduce((n, r) => n + r.setup.banks.filter((b) => b.neverAnswers).length, 0),
  };
}
