import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, Connection, WorkflowExecutionInfo } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { Facade, FacadeResponse, MerchantEndpoint } from '../chaos/merchant';
import { ManagedProcess, sandboxCall, sleep } from '../harness/processes';
import {
  compareApplications,
  compareRefreshes,
  compareTransactions,
  type OurApplication,
  type OurRefreshRun,
} from '../chaos/truth';
import type { ApplicationRecord, RefreshTaskRecord, WebhookDelivery } from '../../src/sandbox/types';
import { consentRefreshWorkflowType } from '../../src/shared/consent-refresh';
import { financeApplicationWorkflowType } from '../../src/shared/finance-application';
import {
  consentClaimWorkflowId,
  consentRefreshWorkflowId,
  financeApplicationWorkflowId,
  transactionEventsWorkflowId,
} from '../../src/shared/ids';
import { UPGRADE_CHECK_SIGNAL } from '../../src/shared/versioning';
import {
  makeCurrentVersion,
  nudgeRunsOnOtherBuilds,
  versionSearchValue,
  versionString,
  type DeploymentVersion,
} from '../../src/temporal/worker-deployment';
import { VARIANT_MARK_FIELD, type VariantBuild } from './build-variant';
import {
  acknowledgedChangesMissing,
  judgeMove,
  judgeNewRuns,
  mixedBuildRuns,
  moveEvents,
  safePointProblems,
  visibilityProblems,
  workflowTaskBuilds,
  type RunBuilds,
} from './checks';
import {
  NAMESPACE,
  out,
  readRefresh,
  secs,
  visibleApplications,
  waitForApplications,
  waitForBankDeliveries,
  waitForPollers,
  waitForTransactions,
} from './flows';
import { judgeFailingGate, judgePassingGate, runReplayGate, type GateVerdict } from './replay-gate';

/**
 * The rolling upgrade of `npm run test:cluster` (docs/decisions/0025-worker-versioning.md): runs open on build A (the
 * repo's dist) — applications waiting on webhooks and polls, one mid-create, one mid-read, one with a merchant's
 * long-poll waiting, a consent claim, a consent refresh, a transactionEvents consent — then build B (a copy of dist
 * whose finance applications add a field to their result: tools/cluster/build-variant.ts) started beside A, gated, made
 * current and nudged; A's workers stopped (SIGTERM) once no run is pinned to A any more. Then every run is checked:
 * finished as the bank says, moved at its safe point (A's tasks, a continue-as-new after the switch, B's tasks), no run
 * with tasks of two builds, new runs on B alone, B's change on what B finished, every acknowledged webhook's change
 * recorded, and the replay gate passing for B and failing for C (an extra timer at the finance application's start).
 */

/** The two variants the upgrade deploys and checks, built from dist by a child process while the first phase runs. */
export interface Variants {
  b: VariantBuild;
  c: VariantBuild;
}

/** The value B's finance applications put in VARIANT_MARK_FIELD. */
export const B_MARK = 'B';

/** Builds B (the result mark) then C (the timer at the start) from `distDir` into `intoDir`, one after the other. */
export async function buildVariants(distDir: string, intoDir: string, logFile: string): Promise<Variants> {
  const script = join(__dirname, 'build-variant.js');
  const one = (name: string, patch: string) =>
    new Promise<VariantBuild>((resolve, reject) => {
      const fd = openSync(logFile, 'a');
      const child = spawn(process.execPath, [script, distDir, join(intoDir, name), patch], {
        stdio: ['ignore', 'pipe', fd],
      });
      closeSync(fd);
      const chunks: Buffer[] = [];
      child.stdout?.on('data', (c: Buffer) => chunks.push(c));
      child.once('error', reject);
      child.once('close', (code) =>
        code === 0
          ? resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as VariantBuild)
          : reject(new Error(`building variant ${name} failed (exit ${code}); see ${logFile}`)),
      );
    });
  const b = await one('build-b', `mark:${B_MARK}`);
  const c = await one('build-c', 'timer-at-start');
  return { b, c };
}

export interface UpgradeContext {
  root: string;
  logOf: (name: string) => string;
  connection: Connection;
  /** With the workers' data converter (results are read). */
  client: Client;
  facade: Facade;
  sandboxUrl: string;
  merchant: MerchantEndpoint;
  merchantId: string;
  tag: string;
  /** The run's workers: A's two first; B's are added (so the run's clean-up stops them). */
  workers: ManagedProcess[];
  /** The environment of worker process `i` (its API, its metrics port). */
  workerEnv: (i: number) => Promise<NodeJS.ProcessEnv>;
  /** The environment of the replay gate (the workers' variables). */
  gateEnv: NodeJS.ProcessEnv;
  a: DeploymentVersion;
  variants: Promise<Variants>;
  /** References finished on A in the first phase: B's mark must not be on them. */
  finishedOnA: string[];
}

export interface UpgradeFigures {
  openOnA: number;
  moved: number;
  /** From B current to the last move (a continue-as-new onto B), and the median. */
  moveMs: number;
  moveMedianMs: number;
  /** History events per move (checks.ts moveEvents): mean and max. */
  extraEventsMean: number;
  extraEventsMax: number;
  drainMs: number;
  stopAMs: number;
}

const { PendingActivityState } = temporal.api.enums.v1;

/** The finance application statuses a driven application walks through after the switch. */
const WALK = ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'];

export async function rollingUpgrade(ctx: UpgradeContext): Promise<{ findings: string[]; figures?: UpgradeFigures }> {
  const { client, connection, facade, sandboxUrl, merchantId } = ctx;
  const findings: string[] = [];
  const t0 = Date.now();
  const ref = (name: string) => `cluster-${ctx.tag}-up-${name}`;
  const wfId = (r: string) => financeApplicationWorkflowId(merchantId, r);
  const sandbox = <T = unknown>(method: string, path: string, body?: unknown) =>
    sandboxCall<T>(sandboxUrl, method, path, body);

  // ---- A with two workers again (worker-1 was killed in the first phase), B's two beside them ----------------
  const aWorkers = ctx.workers.slice(0, 2);
  for (const w of aWorkers) if (!w.running) w.start();
  const variants = await ctx.variants;
  const B: DeploymentVersion = { deploymentName: ctx.a.deploymentName, buildId: variants.b.buildId };
  const vA = ctx.a.buildId;
  const vB = B.buildId;
  const bWorkers: ManagedProcess[] = [];
  for (let i = 0; i < 2; i++) {
    const w = new ManagedProcess(
      `worker-b${i + 1}`,
      process.execPath,
      [join(variants.b.distDir, 'worker.js')],
      await ctx.workerEnv(i),
      ctx.logOf(`worker-b${i + 1}`),
      ctx.root,
    );
    bWorkers.push(w);
    ctx.workers.push(w);
    w.start();
  }
  await waitForPollers(connection, [...aWorkers, ...bWorkers], 90_000);
  out(
    `  rolling upgrade: A ${versionString(ctx.a)} (dist, current; 2 workers), B ${versionString(B)} ` +
      `(finance applications' result gains ${VARIANT_MARK_FIELD}; 2 workers beside A) [${secs(Date.now() - t0)}]`,
  );

  // ---- runs open on A ---------------------------------------------------------------------------------------
  const waiting = [0, 1, 2].map((i) => ref(`wait-${i}`)); // webhooks on, no scripted step: a poll between reads
  const polled = [0, 1].map((i) => ref(`poll-${i}`)); // every webhook dropped: found by polling
  const reading = ref('read'); // a webhook's status read in flight at the switch
  const creating = [0, 1].map((i) => ref(`create-${i}`)); // the bank's create in flight at the switch
  const after = [0, 1, 2].map((i) => ref(`after-${i}`)); // started once B is current
  const driven = [...waiting, reading, ...creating];
  const openRefs = [...driven, ...polled];
  for (const r of [...waiting, reading, ...creating]) {
    await sandbox('POST', '/_sandbox/application-scripts', { script: { steps: [] }, match: { merchantReference: r } });
  }
  for (const r of polled) {
    await sandbox('POST', '/_sandbox/application-scripts', {
      script: { steps: [], webhooks: { drop: true } },
      match: { merchantReference: r },
    });
  }
  for (const r of after) {
    await sandbox('POST', '/_sandbox/application-scripts', {
      script: { steps: WALK.map((status) => ({ status, afterMs: 1_500 })) },
      match: { merchantReference: r },
    });
  }
  const answered = new Map<string, string>();
  const start = async (r: string, api: number): Promise<void> => {
    const res = await facade.startWithRetry(
      api,
      '/applications',
      { merchantReference: r, redirectUrl: 'https://shop.example/return', callbackUrl: ctx.merchant.financeUrl },
      60_000,
    );
    const id = (res.body as { financeApplicationId?: string } | undefined)?.financeApplicationId;
    if (res.status !== null && res.status < 300 && id) answered.set(r, id);
    else findings.push(`${r}: POST /applications answered ${res.status ?? 'nothing'}`);
  };
  await Promise.all([...waiting, ...polled, reading].map((r, i) => start(r, i)));

  // A consent claim; a consent with transactionEvents (its workflow open between bursts).
  const claimConsent = ref('claim');
  await facade.claimConsent(claimConsent);
  const claimBefore = (await facade.request(1, 'GET', `/consents/${claimConsent}`)).body;
  const txConsent = ref('transactions');
  await facade.claimConsent(txConsent);
  await sandbox('PUT', `/_sandbox/consents/${txConsent}`, { operatingAccounts: [`${ctx.tag}-up-op-1`] });
  await sandbox('POST', `/_sandbox/consents/${txConsent}/transaction-events`, { count: 10, withinMs: 1_000 });
  await waitForTransactions(ctx.merchant, txConsent, sandboxUrl, 30_000);

  // The deploy procedure's gate, before B is made current: every open run is pinned to A and stays there.
  const gates: GateVerdict[] = [];
  const gateLog = ctx.logOf('replay-gate');
  gates.push(
    judgePassingGate(
      'replay gate B (before the switch)',
      await runReplayGate(ctx.root, ctx.gateEnv, ['--bundle', variants.b.codePath, '--since', '1h'], gateLog),
      0,
    ),
  );

  // A refresh on A that outlives the switch (bounded by its timeout; refreshes finish on their build).
  const refreshA = ref('refresh-a');
  await sandbox('PUT', `/_sandbox/consents/${refreshA}`, {
    banks: [
      { bankCode: 'BANK_A', bankName: 'Bank A', accounts: [`${ctx.tag}-ra-1`], delayMs: 6_000 },
      { bankCode: 'BANK_B', bankName: 'Bank B', accounts: [`${ctx.tag}-rb-1`], delayMs: 18_000 },
    ],
  });
  const runA: OurRefreshRun = { consentId: refreshA, run: 1, requestedAt: new Date().toISOString() };
  const refreshAnswer = await facade.startWithRetry(
    1,
    `/consents/${refreshA}/refresh`,
    { expectedBankCodes: ['BANK_A', 'BANK_B'], timeout: 60_000 },
    30_000,
  );
  runA.taskId = (refreshAnswer.body as { taskId?: string } | undefined)?.taskId;
  if (refreshAnswer.status !== 202 || !runA.taskId) {
    findings.push(`POST /consents/${refreshA}/refresh answered ${refreshAnswer.status ?? 'nothing'}`);
  }

  // A merchant's long-poll waiting in one of them across the move (at most 60 s: started just before the switch).
  const longPoll = facade.request(
    0,
    'GET',
    `/applications/${waiting[0]!}?waitForChangeFrom=CREATED&timeout=60s`,
    undefined,
    90_000,
  );
  // Mid-activity: the bank slowed, two creates and one webhook's read caught in flight.
  await sandbox('POST', '/_sandbox/api-faults', {
    route: 'createApplication',
    kind: 'latency',
    latencyMs: 8_000,
    count: 2,
  });
  await sandbox('POST', '/_sandbox/api-faults', {
    route: 'getStatus',
    kind: 'latency',
    latencyMs: 8_000,
    count: 'unlimited',
  });
  const creates = Promise.all(creating.map((r, i) => start(r, i)));
  await sandbox('POST', `/_sandbox/applications/${answered.get(reading)!}/webhooks`, { count: 1 });
  const busy = await waitUntilBusy(connection, [
    ...creating.map((r) => ({ workflowId: wfId(r), activityType: 'createApplication' })),
    { workflowId: wfId(reading), activityType: 'getApplicationStatus' },
  ]);
  if (!busy) findings.push('the creates and the read were not all in flight before the switch');
  const longPollWaiting = await waitForUpdate(client, wfId(waiting[0]!), 'waitForStatusChange');
  if (!longPollWaiting) findings.push(`the long-poll of ${waiting[0]!} was not waiting before the switch`);

  // What is open on A now: each must move to B at its safe point (the refresh: finish on A).
  await sleep(1_000); // visibility takes in the latest starts
  const openOnA = new Map<string, { type: string; runId: string }>();
  for await (const wf of client.workflow.list({
    query: `TemporalWorkerDeploymentVersion = '${versionSearchValue(ctx.a)}' AND ExecutionStatus = 'Running'`,
  })) {
    openOnA.set(wf.workflowId, { type: wf.type, runId: wf.runId });
  }
  for (const id of [
    ...openRefs.map(wfId),
    consentClaimWorkflowId(claimConsent),
    consentRefreshWorkflowId(refreshA),
    transactionEventsWorkflowId(merchantId, txConsent),
  ]) {
    if (!openOnA.has(id)) findings.push(`${id} was not open on A at the switch`);
  }

  // ---- the switch ---------------------------------------------------------------------------------------------
  const tSwitch = Date.now();
  await makeCurrentVersion(connection.workflowService, NAMESPACE, B, {
    identity: 'cluster-upgrade',
    // The routing's propagation on the SQL-backed server took over the default 60 s once in this session's runs.
    timeoutMs: 180_000,
  });
  const tCurrent = Date.now();
  // Changes while the runs move: each acknowledged webhook must reach the run that takes it.
  const walks = Promise.all(driven.map((r) => walk(r)));
  let nudges = 0;
  let signalled = (await nudgeRunsOnOtherBuilds(client, B)).signalled;
  nudges += 1;
  await sandbox('DELETE', '/_sandbox/api-faults');
  const types = countBy([...openOnA.values()].map((o) => o.type));
  out(
    `  open on A at the switch: ${openOnA.size} runs (${Object.entries(types)
      .map(([t, n]) => `${n} ${t}`)
      .join(', ')}); ` +
      `in flight: 2 creates, 1 status read, 1 long-poll; B current in ${secs(tCurrent - tSwitch)}, ` +
      `${signalled} nudged (upgradeCheck)`,
  );

  // Runs started after the switch.
  await Promise.all(after.map((r, i) => start(r, i)));
  for (const r of polled)
    await sandbox('POST', `/_sandbox/applications/${answered.get(r)!}/status`, { status: 'IN_PROGRESS' });
  const refreshB = ref('refresh-b');
  await sandbox('PUT', `/_sandbox/consents/${refreshB}`, {
    banks: [{ bankCode: 'BANK_A', bankName: 'Bank A', accounts: [`${ctx.tag}-rb-2`], delayMs: 2_000 }],
  });
  const runB: OurRefreshRun = { consentId: refreshB, run: 1, requestedAt: new Date().toISOString() };
  const refreshBAnswer = await facade.startWithRetry(
    0,
    `/consents/${refreshB}/refresh`,
    { expectedBankCodes: ['BANK_A'], timeout: 30_000 },
    30_000,
  );
  runB.taskId = (refreshBAnswer.body as { taskId?: string } | undefined)?.taskId;
  if (refreshBAnswer.status !== 202 || !runB.taskId) {
    findings.push(`POST /consents/${refreshB}/refresh answered ${refreshBAnswer.status ?? 'nothing'}`);
  }
  const claimB = ref('claim-b');
  await facade.claimConsent(claimB);
  await sandbox('POST', `/_sandbox/consents/${txConsent}/transaction-events`, { count: 10, withinMs: 1_000 });
  for (const r of polled)
    await sandbox('POST', `/_sandbox/applications/${answered.get(r)!}/status`, { status: 'COMPLETED' });

  // ---- A drains: no run pinned to A (the deploy procedure nudges again meanwhile); then A's workers stop ---------
  const onA = `TemporalWorkerDeploymentVersion = '${versionSearchValue(ctx.a)}' AND ExecutionStatus = 'Running'`;
  const drainBound = Date.now() + 180_000;
  let lastNudge = Date.now();
  for (;;) {
    const { count } = await client.workflow.count(onA);
    if (count === 0) break;
    if (Date.now() > drainBound) {
      findings.push(`${count} run(s) still pinned to A ${secs(Date.now() - tCurrent)} after B became current`);
      break;
    }
    if (Date.now() - lastNudge > 5_000) {
      signalled += (await nudgeRunsOnOtherBuilds(client, B)).signalled;
      nudges += 1;
      lastNudge = Date.now();
    }
    await sleep(500);
  }
  const tDrained = Date.now();
  await Promise.all(aWorkers.map((w) => w.stop()));
  const tStopped = Date.now();
  out(
    `  A drained ${secs(tDrained - tCurrent)} after B became current (${nudges} nudge round(s)); ` +
      `A's workers stopped (SIGTERM) in ${secs(tStopped - tDrained)}`,
  );

  // ---- settle ---------------------------------------------------------------------------------------------------
  await creates;
  await walks.catch((err: unknown) => findings.push(`driving the applications: ${(err as Error).message}`));
  const bound = Date.now() + 180_000;
  const allRefs = [...openRefs, ...after];
  await waitForApplications(facade, allRefs, bound);
  runA.view = await readRefresh(facade, refreshA, (v) => v.taskId === runA.taskId && v.done, bound);
  runB.view = await readRefresh(facade, refreshB, (v) => v.taskId === runB.taskId && v.done, bound);
  await waitForTransactions(ctx.merchant, txConsent, sandboxUrl, 60_000);
  await waitForBankDeliveries(sandboxUrl, 60_000);
  const lp = await longPoll;
  const lpState = lp.body as { status?: string } | undefined;
  // Answered by the run the change reached: the status it changed to (or a later one, when asked again meanwhile).
  if (lp.status !== 200 || !WALK.includes(lpState?.status ?? '')) {
    findings.push(
      `the long-poll across the move answered ${lp.status ?? 'nothing'} ${JSON.stringify(lp.body)}, expected 200 ` +
        'with a status after CREATED',
    );
  }
  const claimAfter = await facade.request(1, 'GET', `/consents/${claimConsent}`);
  if (JSON.stringify(claimAfter.body) !== JSON.stringify(claimBefore)) {
    findings.push(
      `consent claim ${claimConsent} changed across the move: ${JSON.stringify(claimBefore)} → ${JSON.stringify(claimAfter.body)}`,
    );
  }
  out(`  upgrade flows settled [${secs(Date.now() - tStopped)}]; checking every run`);

  // ---- the bank's truth ---------------------------------------------------------------------------------------
  const refs = new Set(allRefs);
  const bankApps = (await sandbox<ApplicationRecord[]>('GET', '/_sandbox/applications')).filter((a) =>
    refs.has(String(a.createRequest.merchantReference)),
  );
  const ours: OurApplication[] = [];
  for (const r of allRefs) {
    const our: OurApplication = { merchantReference: r, answeredId: answered.get(r) };
    const res = await facade.request(1, 'GET', `/applications/${r}`);
    if (res.status === 200) our.state = res.body as NonNullable<OurApplication['state']>;
    ours.push(our);
  }
  const tasks = await sandbox<RefreshTaskRecord[]>('GET', '/_sandbox/refresh-tasks');
  const accountWebhooks = await sandbox<WebhookDelivery[]>('GET', '/_sandbox/account-webhooks');
  const tx = compareTransactions({
    deliveries: accountWebhooks.filter((d) => String(d.body.consentId) === txConsent),
    batches: ctx.merchant.transactionBatches.filter((b) => b.consentId === txConsent),
  });
  const truthStart = findings.length;
  const truth = [
    ...compareApplications({ bank: bankApps, ours, callbacks: { merchantId, keys: ctx.merchant.financeKeys } })
      .findings,
    ...compareRefreshes({
      tasks: tasks.filter((t) => t.consentId === refreshA || t.consentId === refreshB),
      runs: [runA, runB],
    }).findings,
    ...tx.findings,
  ];
  if (tx.figures.eventsAcknowledged < 20) {
    findings.push(`${txConsent}: ${tx.figures.eventsAcknowledged} of 20 transactionEvents answered 2xx`);
  }
  for (const f of truth) findings.push(`${f.category.toUpperCase()} ${f.subject}: ${f.what}`);
  findings.push(...visibilityProblems(bankApps, await visibleApplications(client, allRefs)));
  // Each change of a driven application waited until the product showed the previous one: every status whose
  // webhook was acknowledged (202) must be in its history, also those that arrived while the run moved.
  let acknowledged = 0;
  for (const r of driven) {
    const bank = bankApps.find((a) => a.financeApplicationId === answered.get(r));
    const history = ours.find((o) => o.merchantReference === r)?.state?.history ?? [];
    if (!bank) continue;
    acknowledged += new Set(
      bank.webhooks
        .filter((d) => d.trigger.startsWith('status:') && d.attempts.some((x) => x.status === 202))
        .map((d) => d.trigger),
    ).size;
    findings.push(...acknowledgedChangesMissing(bank, history));
  }
  if (acknowledged === 0) findings.push('no status webhook of the driven applications was acknowledged');
  out(
    `  ${allRefs.length} applications, 2 refreshes, 20 transactionEvents; ${acknowledged} acknowledged status ` +
      `webhooks of the driven applications; the long-poll and the consent claim across the move: ` +
      verdict(findings.length - truthStart, 'all as the bank has them, every acknowledged change recorded'),
  );

  // ---- every run's builds ---------------------------------------------------------------------------------------
  const versions = { a: vA, b: vB };
  const runsOf = new Map<string, RunBuilds[]>();
  const eventsOf = new Map<string, temporal.api.history.v1.IHistoryEvent[]>();
  let runsChecked = 0;
  for await (const wf of client.workflow.list({ query: '' })) {
    const events = (await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ?? [];
    eventsOf.set(wf.runId, events);
    const run = runBuilds(wf, events);
    runsOf.set(wf.workflowId, [...(runsOf.get(wf.workflowId) ?? []), run]);
    runsChecked += 1;
  }
  const mixed = mixedBuildRuns([...runsOf.values()].flat());
  findings.push(...mixed);
  const moveStart = findings.length;
  const moveTimes: number[] = [];
  const moveCosts: number[] = [];
  for (const [workflowId, open] of openOnA) {
    const runs = (runsOf.get(workflowId) ?? []).sort((x, y) => x.startMs - y.startMs);
    const stays = open.type === consentRefreshWorkflowType;
    findings.push(...judgeMove(runs, versions, tCurrent, stays));
    if (stays) continue;
    const firstB = runs.findIndex((r) => r.builds.length > 0 && r.builds.every((b) => b === vB));
    const lastA = runs[firstB - 1];
    if (firstB < 1 || !lastA) continue;
    findings.push(...safePointProblems(eventsOf.get(lastA.runId) ?? []).map((p) => `${workflowId}: ${p}`));
    moveTimes.push((lastA.closeMs ?? tCurrent) - tCurrent);
    const cost = moveEvents(
      eventsOf.get(lastA.runId) ?? [],
      eventsOf.get(runs[firstB]!.runId) ?? [],
      UPGRADE_CHECK_SIGNAL,
    );
    if (cost !== undefined) moveCosts.push(cost);
  }
  const newIds = [
    ...after.map(wfId),
    consentClaimWorkflowId(claimB),
    ...[...runsOf.values()]
      .flat()
      .filter((r) => r.workflowType === consentRefreshWorkflowType && r.startMs > tCurrent)
      .map((r) => r.workflowId),
  ];
  const newRuns = [...new Set(newIds)].flatMap((id) => (runsOf.get(id) ?? []).filter((r) => r.startMs > tCurrent));
  const moveProblems = findings.length - moveStart;
  const newProblems = judgeNewRuns(newRuns, vB);
  if (newRuns.length < after.length + 2) newProblems.push(`only ${newRuns.length} runs found started after the switch`);
  findings.push(...newProblems);
  const moved = moveTimes.length;
  const sortedTimes = [...moveTimes].sort((x, y) => x - y);
  const figures: UpgradeFigures = {
    openOnA: openOnA.size,
    moved,
    moveMs: sortedTimes[sortedTimes.length - 1] ?? 0,
    moveMedianMs: sortedTimes[Math.floor(sortedTimes.length / 2)] ?? 0,
    extraEventsMean: moveCosts.length ? moveCosts.reduce((n, c) => n + c, 0) / moveCosts.length : 0,
    extraEventsMax: Math.max(0, ...moveCosts),
    drainMs: tDrained - tCurrent,
    stopAMs: tStopped - tDrained,
  };
  out(
    `  ${moved} of the ${openOnA.size - (types[consentRefreshWorkflowType] ?? 0)} workflows open on A moved to B, ` +
      `the last ${secs(figures.moveMs)} after B became current (median ${secs(figures.moveMedianMs)}); extra ` +
      `history events per move: mean ${figures.extraEventsMean.toFixed(1)}, max ${figures.extraEventsMax}; ` +
      verdict(
        moveProblems,
        "each at its safe point (A's tasks, a continue-as-new after the switch with its updates answered, then B's " +
          'alone), the consent refresh finished on A',
      ),
  );
  out(
    `  ${newRuns.length} runs started after the switch: ${verdict(newProblems.length, 'on B alone')}; ` +
      `${runsChecked} runs checked for workflow tasks of two builds: ${verdict(mixed.length, 'none')}`,
  );

  // ---- B's change shows on what B finished, not on what A finished ----------------------------------------------
  let marked = 0;
  for (const r of allRefs) {
    const result = (await client.workflow
      .getHandle(wfId(r))
      .result()
      .catch(() => undefined)) as Record<string, unknown> | undefined;
    if (result?.[VARIANT_MARK_FIELD] === B_MARK) marked += 1;
    else findings.push(`${r}: finished on B without ${VARIANT_MARK_FIELD} = '${B_MARK}' in its result`);
  }
  let unmarked = 0;
  for (const r of ctx.finishedOnA) {
    const result = (await client.workflow
      .getHandle(wfId(r))
      .result()
      .catch(() => undefined)) as Record<string, unknown> | undefined;
    if (result && !(VARIANT_MARK_FIELD in result)) unmarked += 1;
    else
      findings.push(
        `${r}: finished on A, yet its result is ${result ? `marked ${String(result[VARIANT_MARK_FIELD])}` : 'unreadable'}`,
      );
  }
  out(
    `  B's change: ${VARIANT_MARK_FIELD} '${B_MARK}' in the result of ${marked} of the ${allRefs.length} applications finished on B, ` +
      `absent from ${unmarked} of the ${ctx.finishedOnA.length} finished on A`,
  );

  // ---- the replay gate: B passes on the runs it executed, C (an extra timer at the start) fails --------------------
  gates.push(
    judgePassingGate(
      'replay gate B (its own runs)',
      await runReplayGate(
        ctx.root,
        ctx.gateEnv,
        ['--bundle', variants.b.codePath, '--since', '1h', '--sample', '500'],
        gateLog,
      ),
      1,
    ),
  );
  // The same histories against B and C: B's change keeps every command (passes even A's runs), C's does not.
  const financeRuns = [...runsOf.values()].flat().filter((r) => r.workflowType === financeApplicationWorkflowType);
  gates.push(
    judgePassingGate(
      'replay gate B --all',
      await runReplayGate(
        ctx.root,
        ctx.gateEnv,
        ['--bundle', variants.b.codePath, '--since', '1h', '--sample', '500', '--all'],
        gateLog,
      ),
      financeRuns.length,
    ),
  );
  const financeIds = financeRuns.map((r) => r.workflowId);
  gates.push(
    judgeFailingGate(
      'replay gate C --all',
      await runReplayGate(
        ctx.root,
        ctx.gateEnv,
        ['--bundle', variants.c.codePath, '--since', '1h', '--sample', '500', '--all'],
        gateLog,
      ),
      [...new Set(financeIds)],
      financeApplicationWorkflowType,
    ),
  );
  for (const g of gates) {
    out(`  ${g.summary}`);
    findings.push(...g.problems);
  }
  for (const p of [...bWorkers, ...aWorkers]) {
    for (const e of p.unexpectedExits.filter((x) => x.at >= t0)) {
      findings.push(`${e.name} exited on its own (${e.code ?? e.signal})`);
    }
  }
  return { findings, figures };

  /** Walks an application through WALK (DECLINED for the third waiting one), each step once the product shows the last. */
  async function walk(r: string): Promise<void> {
    const statuses = r === waiting[2] ? ['IN_PROGRESS', 'DECLINED'] : WALK;
    const deadline = Date.now() + 120_000;
    while (!answered.has(r) && Date.now() < deadline) await sleep(250); // a create in flight answers later
    const id = answered.get(r);
    if (!id) return; // its POST never answered 2xx: a finding already
    for (const status of statuses) {
      await sandbox('POST', `/_sandbox/applications/${id}/status`, { status });
      for (;;) {
        const res: FacadeResponse = await facade.request(1, 'GET', `/applications/${r}`);
        if (res.status === 200 && (res.body as { status?: string }).status === status) break;
        if (Date.now() > deadline) throw new Error(`${r} never showed ${status}`);
        await sleep(250);
      }
    }
  }
}

/** `ok`, or how many problems the run lists below. */
function verdict(problems: number, ok: string): string {
  return problems === 0 ? ok : `${problems} problem(s), see FAIL below`;
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

function runBuilds(wf: WorkflowExecutionInfo, events: temporal.api.history.v1.IHistoryEvent[]): RunBuilds {
  return {
    workflowId: wf.workflowId,
    runId: wf.runId,
    workflowType: wf.type,
    status: wf.status.name,
    startMs: wf.startTime.getTime(),
    closeMs: wf.closeTime?.getTime() ?? optionalTsToMs(events[events.length - 1]?.eventTime),
    builds: workflowTaskBuilds(events),
  };
}

/** Until each (workflow, activity type) has a started attempt (describe's pending activities); false at the bound. */
async function waitUntilBusy(
  connection: Connection,
  wanted: { workflowId: string; activityType: string }[],
  timeoutMs = 30_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy = await Promise.all(
      wanted.map(async (w) => {
        const d = await connection.workflowService
          .describeWorkflowExecution({ namespace: NAMESPACE, execution: { workflowId: w.workflowId } })
          .catch(() => undefined);
        return (d?.pendingActivities ?? []).some(
          (a) =>
            a.activityType?.name === w.activityType && a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
        );
      }),
    );
    if (busy.every(Boolean)) return true;
    if (Date.now() > deadline) return false;
    await sleep(200);
  }
}

/** Until the workflow's history has an accepted update named `name`; false after `timeoutMs`. */
async function waitForUpdate(client: Client, workflowId: string, name: string, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    if (events.some((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name)) {
      return true;
    }
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
}
