/**
 * The chaos run's seeded fault plan (tools/chaos/plan.ts): the same seed gives the same plan, and the plan has the
 * rates, spacing and shapes the chaos run promises. Pure: no server.
 */
import {
  describePlan,
  DEFAULT_SIZES,
  makeFaultPlan,
  RATES,
  REFRESH_TIMING,
  type TimedFault,
} from '../../tools/chaos/plan';
import { seededRng } from '../../tools/chaos/prng';
import { FINANCE_APPLICATION_STATUS_ORDER, TERMINAL_FINANCE_APPLICATION_STATUSES } from '../../src/shared/bank-wire';

const SEEDS = [1, 2, 3, 4, 5, 42, 1000];
const rank = (s: string) => (FINANCE_APPLICATION_STATUS_ORDER as Record<string, number>)[s];

describe('seeded PRNG', () => {
  it('repeats a sequence for a seed, differs between seeds, stays in range', () => {
    const a = seededRng(7);
    const b = seededRng(7);
    const xs = Array.from({ length: 100 }, () => a.next());
    expect(Array.from({ length: 100 }, () => b.next())).toEqual(xs);
    expect(Array.from({ length: 100 }, () => seededRng(8).next())).not.toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const r = seededRng(9);
    const ints = Array.from({ length: 1000 }, () => r.int(3, 5));
    expect(new Set(ints)).toEqual(new Set([3, 4, 5]));
  });

  it('forks by label: a fork does not depend on the draws made before it', () => {
    const a = seededRng(1);
    a.next();
    expect(a.fork('x').next()).toBe(seededRng(1).fork('x').next());
    expect(seededRng(1).fork('x').next()).not.toBe(seededRng(1).fork('y').next());
  });
});

describe('fault plan', () => {
  it('is the same for the same seed and differs between seeds', () => {
    expect(makeFaultPlan(3)).toEqual(makeFaultPlan(3));
    expect(makeFaultPlan(3)).not.toEqual(makeFaultPlan(4));
  });

  it('drops about 30 % of finance webhooks and duplicates about 20 % of applications, over the seeds', () => {
    let changes = 0;
    let dropped = 0;
    let apps = 0;
    let duplicated = 0;
    for (const seed of SEEDS) {
      const plan = makeFaultPlan(seed);
      const d = describePlan(plan);
      changes += d.statusChanges;
      dropped += d.droppedWebhooks;
      apps += plan.applications.length;
      duplicated += plan.applications.filter((a) => (a.script.webhooks?.duplicate ?? 1) > 1).length;
    }
    expect(dropped / changes).toBeGreaterThan(0.25);
    expect(dropped / changes).toBeLessThan(0.35);
    expect(duplicated / apps).toBeGreaterThan(0.15);
    expect(duplicated / apps).toBeLessThan(0.25);
  });

  it('gives every application a unique reference, a start in the load phase and a forward lifecycle to an end', () => {
    for (const seed of SEEDS) {
      const plan = makeFaultPlan(seed);
      expect(plan.applications).toHaveLength(DEFAULT_SIZES.applications);
      expect(new Set(plan.applications.map((a) => a.merchantReference)).size).toBe(plan.applications.length);
      for (const app of plan.applications) {
        expect(app.atMs).toBeGreaterThanOrEqual(0);
        expect(app.atMs).toBeLessThanOrEqual(DEFAULT_SIZES.durationMs);
        const statuses = app.script.steps.map((s) => s.status);
        expect(TERMINAL_FINANCE_APPLICATION_STATUSES).toContain(statuses[statuses.length - 1]);
        const ranks = [0, ...statuses.map(rank)];
        for (let i = 1; i < ranks.length; i++) expect(ranks[i]!).toBeGreaterThan(ranks[i - 1]!);
        // A per-run drop switch at the sandbox must never override the plan's per-step drops.
        expect(app.script.webhooks?.drop).toBe(false);
      }
    }
  });

  it('kills a worker about every 20 s, in turn, within the load phase', () => {
    for (const seed of SEEDS) {
      const kills = makeFaultPlan(seed).faults.filter(
        (f): f is Extract<TimedFault, { kind: 'kill-worker' }> => f.kind === 'kill-worker',
      );
      expect(kills.length).toBeGreaterThanOrEqual(4);
      expect(kills[0]!.atMs).toBeLessThanOrEqual(16_000);
      for (let i = 1; i < kills.length; i++) {
        const gap = kills[i]!.atMs - kills[i - 1]!.atMs;
        expect(gap).toBeGreaterThanOrEqual(15_000);
        expect(gap).toBeLessThanOrEqual(25_000);
        expect(kills[i]!.worker).not.toBe(kills[i - 1]!.worker);
      }
      for (const k of kills) expect(k.atMs).toBeLessThan(DEFAULT_SIZES.durationMs);
    }
  });

  it('restarts Temporal once or twice in the middle of the run (or as often as asked), with either signal', () => {
    const signals = new Set<string>();
    const counts = new Set<number>();
    for (const seed of SEEDS) {
      const restarts = makeFaultPlan(seed).faults.filter((f) => f.kind === 'restart-temporal');
      counts.add(restarts.length);
      for (const r of restarts) {
        signals.add(r.signal);
        expect(r.atMs).toBeGreaterThanOrEqual(DEFAULT_SIZES.durationMs * 0.15);
        expect(r.atMs).toBeLessThanOrEqual(DEFAULT_SIZES.durationMs * 0.8);
      }
    }
    expect(counts).toEqual(new Set([1, 2]));
    expect(signals).toEqual(new Set(['SIGTERM', 'SIGKILL']));
    const three = makeFaultPlan(1, { ...DEFAULT_SIZES, temporalRestarts: 3 });
    expect(three.faults.filter((f) => f.kind === 'restart-temporal')).toHaveLength(3);
  });

  it('injects bank API faults in proportion to the load, ambiguous creates among them', () => {
    let ambiguous = 0;
    for (const seed of SEEDS) {
      const plan = makeFaultPlan(seed);
      const d = describePlan(plan);
      expect(d.apiFaults).toBe(
        Math.round((DEFAULT_SIZES.applications + DEFAULT_SIZES.refreshes) * RATES.apiFaultsPerItem),
      );
      ambiguous += d.ambiguousCreates;
    }
    expect(ambiguous).toBeGreaterThan(0);
    expect(describePlan(makeFaultPlan(1, { ...DEFAULT_SIZES, applications: 1, refreshes: 0 })).apiFaults).toBe(2);
  });

  it('plans the refreshes asked for, second ones without bank codes, late banks after the close', () => {
    for (const seed of SEEDS) {
      const plan = makeFaultPlan(seed);
      const d = describePlan(plan);
      expect(d.refreshRuns).toBe(DEFAULT_SIZES.refreshes);
      expect(d.secondRefreshes).toBeGreaterThan(0);
      for (const consent of plan.consents) {
        const codes = consent.runs[0]!.setup.banks.map((b) => b.bankCode);
        expect(codes.length).toBeGreaterThanOrEqual(2);
        expect(new Set(codes).size).toBe(codes.length);
        consent.runs.slice(1).forEach((run) => expect(run.request.expectedBankCodes).toBeUndefined());
        for (const run of consent.runs) {
          expect(run.setup.banks.map((b) => b.bankCode)).toEqual(codes);
          const onTime = run.setup.banks.filter((b) => !run.lateBanks.includes(b.bankCode) && !b.neverAnswers);
          const close = run.request.expectedBankCodes
            ? run.request.timeout
            : Math.max(0, ...onTime.map((b) => b.delayMs!)) + run.request.quietPeriod!;
          for (const code of run.lateBanks) {
            expect(run.setup.banks.find((b) => b.bankCode === code)!.delayMs!).toBeGreaterThan(
              close + REFRESH_TIMING.lateByMs[0] - 1,
            );
          }
        }
      }
    }
    const late = SEEDS.reduce((n, seed) => n + describePlan(makeFaultPlan(seed)).lateBanks, 0);
    expect(late).toBeGreaterThan(0);
  });

  it('sends transactionEvent bursts to consents of the plan, and sorts every fault by time', () => {
    for (const seed of SEEDS) {
      const plan = makeFaultPlan(seed);
      const consents = new Set(plan.consents.map((c) => c.consentId));
      const bursts = plan.faults.filter((f) => f.kind === 'transaction-burst');
      expect(bursts.length).toBeGreaterThan(0);
      for (const b of bursts) expect(consents.has(b.consentId)).toBe(true);
      const times = plan.faults.map((f) => f.atMs);
      expect(times).toEqual([...times].sort((x, y) => x - y));
    }
  });
});
