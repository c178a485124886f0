import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Facade, startMerchantEndpoint, type MerchantEndpoint } from '../chaos/merchant';
import { freePort, ManagedProcess, sandboxCall, sleep, waitForHttp } from '../harness/processes';
import { apiProcess, sandboxProcess, serviceEnv, workerProcess } from '../harness/service-processes';
import {
  compareApplications,
  compareRefreshes,
  compareTransactions,
  type Finding,
  type OurApplication,
  type OurRefreshRun,
} from '../chaos/truth';
import type { ApplicationRecord, RefreshTaskRecord, WebhookDelivery } from '../../src/sandbox/types';
import { loadWorkflowBundle } from '../../src/worker/prebuilt-workflow-bundle';
import { createPayloadCodec, parsePayloadEncryptionKeys } from '../../src/security/payload-codec';
import {
  RefreshTaskId,
  DATETIME_SEARCH_ATTRIBUTE_NAMES,
  SEARCH_ATTRIBUTE_NAMES,
} from '../../src/shared/search-attributes';
import { findTemporalCli, MISSING_BINARY_HELP, projectRoot } from '../../src/temporal/binaries';
import { createDataConverter } from '../../src/temporal/data-converter';
import { consentRefreshWorkflowType } from '../../src/shared/consent-refresh';
import { financeApplicationWorkflowId } from '../../src/shared/ids';
import {
  buildIdOf,
  DEFAULT_WORKER_DEPLOYMENT_NAME,
  makeCurrentVersion,
  versionString,
  type DeploymentVersion,
} from '../../src/temporal/worker-deployment';
import { activityOutcome, judgeTakeover, searchAttributeProblems, visibilityProblems } from './checks';
import {
  Failure,
  lifecycle,
  NAMESPACE,
  out,
  readRefresh,
  secs,
  snapshotUntilBusy,
  TASK_QUEUE,
  visibleApplications,
  waitForApplications,
  waitForBankDeliveries,
  waitForPollers,
  waitForTransactions,
} from './flows';
import type { Postgres } from './postgres';
import { startTemporalCluster } from './temporal-cluster';
import { SPLIT_HISTORY_SHARDS, clusterToolchain, type ClusterTopology } from './temporal-server';
import { buildVariants, rollingUpgrade, type Variants } from './upgrade';

/**
 * `npm run test:cluster`: the production path on one machine. A throwaway PostgreSQL, the Temporal server built
 * from its Go module and set up by deploy/temporal/setup.sh (schema, then init: the script compose runs, each run
 * twice to show it is idempotent), the bank sandbox, two workers and two API processes from the production entry
 * points (dist/). Then end-to-end flows through the API processes — applications finished through webhooks and
 * through polling (webhooks dropped), a consent refresh, a transactionEvent burst — with one worker SIGKILLed
 * while it runs activities and one API process SIGKILLed (and restarted, as a supervisor would) in the middle.
 *
 * The workers join the Worker Deployment `paylater` as dist's build (A), made current. Then a rolling upgrade
 * (tools/cluster/upgrade.ts): build B, a copy of dist with a behavioural change to the finance application workflow
 * (tools/cluster/build-variant.ts), started beside A with runs of every kind open on A, gated by the replay check, made
 * current and nudged; A's workers stopped once drained; every run checked (moved at its safe point, one build per
 * run, new runs on B, B's change visible), and the replay gate failing for an incompatible build C.
 *
 * Exits 1 when a search attribute is missing, when the killed worker's activities were not completed by the other
 * worker, or when any application, refresh or transaction batch differs from the sandbox's ground truth (also
 * as seen through visibility queries on the SQL store), or when the rolling upgrade's checks fail; 2 when the stack
 * could not be brought up. Every process
 * and the temp Postgres are removed on exit, also on failure or Ctrl-C.
 *
 * CLUSTER_PORT_BASE=n: take ports n, n+1, … (else free ports); CLUSTER_DIR: logs (default data/cluster/<time>).
 * CLUSTER_TOPOLOGY=split: the server as production runs it, a process per service and two history processes on 512
 * shards (tools/cluster/temporal-server.ts serverProcesses); one history process is SIGKILLed and restarted mid-run.
 */
const COMMAND = 'npm run test:cluster';
const TOPOLOGY: ClusterTopology = (() => {
  const value = process.env.CLUSTER_TOPOLOGY ?? 'single';
  if (value !== 'single' && value !== 'split')
    throw new Error(`CLUSTER_TOPOLOGY must be single or split, not ${value}`);
  return value;
})();
/** The merchant of the run (its one key in MERCHANT_API_KEYS): every application is its own. */
const MERCHANT = 'cluster';
const WEBHOOK_APPS = 6;
const POLLED_APPS = 3;
/** Bank latency while the worker is killed: its activities are caught mid-call (below the 20 s HTTP deadline). */
const KILL_LATENCY_MS = 12_000;
/** The activities that call the bank's status route, which that latency slows. */
const SLOWED_ACTIVITIES = new Set(['getApplicationStatus', 'pollApplicationStatus']);
/** transactionEvents in the burst. */
const BURST = 25;

function portAllocator(): () => Promise<number> {
  const raw = process.env.CLUSTER_PORT_BASE;
  if (!raw) return freePort;
  const base = Number(raw);
  if (!Number.isInteger(base) || base < 1024 || base > 65_000) {
    throw new Failure(`CLUSTER_PORT_BASE must be a port number between 1024 and 65000 (got "${raw}")`);
  }
  let next = base;
  return () => Promise.resolve(next++);
}

interface Stack {
  postgres?: Postgres;
  /** The Temporal server's processes: one, or five when split (CLUSTER_TOPOLOGY). */
  servers: ManagedProcess[];
  sandbox?: ManagedProcess;
  workers: ManagedProcess[];
  apis: ManagedProcess[];
  merchant?: MerchantEndpoint;
  connection?: Connection;
  /** The rolling upgrade's builds B and C (copies of dist), removed at the end. */
  variantsDir?: string;
}

/**
 * On a signal: every process stopped at once (a Ctrl-C reaches the whole process group, so each child is stopping
 * already; stopping them all first keeps any from being restarted), then the temp PostgreSQL folder removed.
 */
async function abortAll(stack: Stack): Promise<void> {
  const all = [...stack.workers, ...stack.apis, stack.sandbox, ...stack.servers, stack.postgres?.process];
  await Promise.all(all.filter((p) => p !== undefined).map((p) => p.stop(5_000)));
  await stack.postgres?.stop();
  if (stack.variantsDir) rmSync(stack.variantsDir, { recursive: true, force: true });
}

/** Stops everything the run started, clients first (at the run's end). */
async function stopInOrder(stack: Stack): Promise<void> {
  await stack.connection?.close().catch(() => undefined);
  await Promise.all([...stack.workers, ...stack.apis].map((p) => p.stop()));
  await stack.sandbox?.stop();
  await stack.merchant?.close();
  await Promise.all(stack.servers.map((p) => p.stop()));
  await stack.postgres?.stop();
  if (stack.variantsDir) rmSync(stack.variantsDir, { recursive: true, force: true });
}

async function main(): Promise<number> {
  const t0 = Date.now();
  const root = projectRoot();
  const runDir =
    process.env.CLUSTER_DIR ?? join(root, 'data', 'cluster', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(runDir, { recursive: true });
  const logOf = (name: string) => join(runDir, `${name}.log`);
  const port = portAllocator();
  const cli = findTemporalCli();
  if (!cli) throw new Failure(MISSING_BINARY_HELP);
  out(`${COMMAND}: logs in ${runDir}; node ${process.version}`);

  const tools = clusterToolchain(root);
  const tReady = Date.now();
  out(
    `  toolchain: Temporal server ${tools.version} (${tools.server}), PostgreSQL ${tools.postgresBinDir} ` +
      `[${secs(tReady - t0)}]`,
  );

  const stack: Stack = { workers: [], apis: [], servers: [] };
  running = stack;
  const findings: string[] = [];
  // Build A is dist; B and C (the rolling upgrade's) are built from it in a child process while the first phase runs.
  const distDir = join(root, 'dist');
  const A: DeploymentVersion = {
    deploymentName: DEFAULT_WORKER_DEPLOYMENT_NAME,
    buildId: buildIdOf(loadWorkflowBundle(distDir).manifest.inputsSha256),
  };
  stack.variantsDir = mkdtempSync(join(tmpdir(), 'paylater-cluster-variants-'));
  const variants: Promise<Variants> = buildVariants(distDir, stack.variantsDir, logOf('build-variants'));
  variants.catch(() => undefined); // awaited by the upgrade phase; a failure there is its finding
  try {
    // ---- PostgreSQL and the Temporal server, set up by setup.sh ---------------------------------------------
    const { address } = await startTemporalCluster({
      root,
      tools,
      cli,
      topology: TOPOLOGY,
      port,
      logOf,
      runDir,
      namespace: NAMESPACE,
      into: stack,
      setupTwice: true,
    });
    const tUp = Date.now();
    out(
      `  Temporal ${tools.version} on PostgreSQL at ${address}` +
        (TOPOLOGY === 'split'
          ? ` (split: ${stack.servers.map((p) => p.name.replace('temporal-', '')).join(', ')}; ${SPLIT_HISTORY_SHARDS} shards)`
          : '') +
        `; setup.sh schema and init, each twice ` +
        `[${secs(tUp - tReady)}]`,
    );

    stack.connection = await Connection.connect({ address });
    const connection = stack.connection;
    const listed = await connection.operatorService.listSearchAttributes({ namespace: NAMESPACE });
    const saProblems = searchAttributeProblems(listed.customAttributes ?? {});
    if (saProblems.length) throw new Failure(saProblems.join('; '));
    out(
      `  search attributes registered on the SQL visibility store: ${[...SEARCH_ATTRIBUTE_NAMES, ...DATETIME_SEARCH_ATTRIBUTE_NAMES].join(', ')}`,
    );

    // ---- the application: sandbox, two APIs, two workers ----------------------------------------------------
    const secrets = {
      hash: randomBytes(32).toString('base64url'),
      apiKey: randomBytes(24).toString('base64url'),
      header: `Cluster ${randomBytes(18).toString('hex')}`,
      signing: `whsec_${randomBytes(32).toString('base64')}`,
      payloadKeys: `cluster-1:${randomBytes(32).toString('base64')}`,
    };
    stack.merchant = await startMerchantEndpoint();
    const merchant = stack.merchant;
    const sandboxPort = await port();
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    const apiPorts = [
      { public: await port(), internal: await port() },
      { public: await port(), internal: await port() },
    ];
    const publicUrls = apiPorts.map((p) => `http://127.0.0.1:${p.public}`);
    const internalUrls = apiPorts.map((p) => `http://127.0.0.1:${p.internal}`);
    const place = { root, log: logOf };
    stack.sandbox = sandboxProcess(place, {
      port: sandboxPort,
      client: { id: 'sandbox-client', secret: 'sandbox-secret' },
      // Account webhooks reach the second API (the first is the one killed).
      accountWebhookUrl: `${publicUrls[1]}/webhooks/accounts`,
      securityHeader: secrets.header,
    });
    const appEnv = serviceEnv({
      temporalAddress: address,
      namespace: NAMESPACE,
      taskQueue: TASK_QUEUE,
      sandboxUrl,
      secrets,
      merchant: MERCHANT,
      operatorKey: `cluster-operator:${randomBytes(24).toString('base64url')}`,
      callbacks: { origin: merchant.origin, transactionsUrl: merchant.transactionsUrl },
    });
    stack.apis = apiPorts.map((p, i) => apiProcess(place, `api-${i + 1}`, appEnv, p, publicUrls[i]!));
    // Each worker's applications name its own API in their webhook URL: both receivers get finance webhooks. The
    // workers join the Worker Deployment as the build of their workflow bundle (A: dist's).
    const workerEnv = async (i: number) => ({
      ...appEnv,
      WORKER_DEPLOYMENT_NAME: A.deploymentName,
      PUBLIC_BASE_URL: publicUrls[i % publicUrls.length]!,
      WORKER_METRICS_PORT: String(await port()),
    });
    for (let i = 0; i < 2; i++) stack.workers.push(workerProcess(place, `worker-${i + 1}`, await workerEnv(i)));
    stack.sandbox.start();
    await waitForHttp(`${sandboxUrl}/_sandbox/token-requests`, 30_000);
    for (const p of [...stack.apis, ...stack.workers]) p.start();
    await Promise.all(internalUrls.map((url) => waitForHttp(`${url}/readyz`, 90_000)));
    const identities = await waitForPollers(connection, stack.workers, 90_000);
    // Versioned workers get tasks only once their version is current (what `npm start`, or the deploy procedure, does).
    await makeCurrentVersion(connection.workflowService, NAMESPACE, A, {
      identity: 'cluster',
      // The routing's propagation on the SQL-backed server took over the default 60 s once in this session's runs.
      timeoutMs: 180_000,
    });
    const tApp = Date.now();
    out(
      `  sandbox, 2 API processes (${publicUrls.join(' ')}), 2 workers (${identities.join(', ')}) of build ` +
        `${versionString(A)}, made current [${secs(tApp - tUp)}]`,
    );

    // ---- flows ----------------------------------------------------------------------------------------------
    const facade = new Facade(internalUrls, secrets.apiKey);
    const tag = randomBytes(3).toString('hex');
    const apps = [
      ...Array.from({ length: WEBHOOK_APPS }, (_, i) => ({
        ref: `cluster-${tag}-webhook-${i}`,
        script: lifecycle(
          i % 3 === 2 ? ['IN_PROGRESS', 'DECLINED'] : ['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'],
          3_000,
          false,
        ),
      })),
      ...Array.from({ length: POLLED_APPS }, (_, i) => ({
        ref: `cluster-${tag}-polled-${i}`,
        script: lifecycle(['IN_PROGRESS', 'APPROVED', 'SIGNED', 'COMPLETED'], 1_000, true),
      })),
    ];
    for (const app of apps) {
      await sandboxCall(sandboxUrl, 'POST', '/_sandbox/application-scripts', {
        script: app.script,
        match: { merchantReference: app.ref },
      });
    }
    const answered = new Map<string, string>();
    await Promise.all(
      apps.map(async (app, i) => {
        const res = await facade.startWithRetry(
          i,
          '/applications',
          { merchantReference: app.ref, redirectUrl: 'https://shop.example/return', callbackUrl: merchant.financeUrl },
          120_000,
        );
        const id = (res.body as { financeApplicationId?: string } | undefined)?.financeApplicationId;
        if (res.status !== null && res.status < 300 && id) answered.set(app.ref, id);
        else findings.push(`${app.ref}: POST /applications answered ${res.status ?? 'nothing'}`);
      }),
    );
    out(
      `  ${answered.size}/${apps.length} applications created through the facade (${WEBHOOK_APPS} followed by ` +
        `webhooks, ${POLLED_APPS} with every webhook dropped: polling)`,
    );

    // The worker kill: bank calls slowed so worker-1 is caught mid-activity; the snapshot names what it held.
    await sandboxCall(sandboxUrl, 'POST', '/_sandbox/api-faults', {
      route: 'getStatus',
      kind: 'latency',
      latencyMs: KILL_LATENCY_MS,
      count: 'unlimited',
    });
    const victim = stack.workers[0]!;
    const victimIdentity = identities[0]!;
    // Until it holds a status read, which the latency keeps in the bank call: a callback it also held may finish
    // before the kill (seen in a CI run: the kill then showed no takeover).
    const pendingAtKill = await snapshotUntilBusy(connection, victimIdentity, 60_000, (type) =>
      SLOWED_ACTIVITIES.has(type),
    );
    await victim.kill('SIGKILL');
    const killedAt = Date.now();
    out(
      `  SIGKILL ${victim.name} (${victimIdentity}) while it ran ${pendingAtKill.length} activities ` +
        `(${[...new Set(pendingAtKill.map((p) => p.activityType))].join(', ') || 'none'})`,
    );
    await sleep(2_000);
    await sandboxCall(sandboxUrl, 'DELETE', '/_sandbox/api-faults');

    // The API kill: the first API (half the finance webhooks, half the merchant calls) dies, back after 3 s.
    const apiVictim = stack.apis[0]!;
    await apiVictim.kill('SIGKILL');
    out(`  SIGKILL ${apiVictim.name}; a supervisor starts it again after 3 s`);

    // A consent refresh and a transactionEvent burst while the API is down and the worker is gone.
    const refreshConsent = `cluster-${tag}-consent-refresh`;
    const banks = [
      { bankCode: 'BANK_A', bankName: 'Bank A', accounts: [`${tag}-a-1`, `${tag}-a-2`], delayMs: 1_500 },
      { bankCode: 'BANK_B', bankName: 'Bank B', accounts: [`${tag}-b-1`], delayMs: 3_000 },
      { bankCode: 'BANK_C', bankName: 'Bank C', accounts: [`${tag}-c-1`], delayMs: 4_500, taskStatus: 'FAILED' },
    ];
    await sandboxCall(sandboxUrl, 'PUT', `/_sandbox/consents/${refreshConsent}`, { banks, duplicateEvents: 2 });
    const run: OurRefreshRun = { consentId: refreshConsent, run: 1, requestedAt: new Date().toISOString() };
    const refreshAnswer = await facade.startWithRetry(
      1,
      `/consents/${refreshConsent}/refresh`,
      { expectedBankCodes: banks.map((b) => b.bankCode), timeout: 60_000 },
      120_000,
    );
    run.taskId = (refreshAnswer.body as { taskId?: string } | undefined)?.taskId;
    if (refreshAnswer.status !== 202 || !run.taskId) {
      findings.push(`POST /consents/${refreshConsent}/refresh answered ${refreshAnswer.status ?? 'nothing'}`);
    }
    const burstConsent = `cluster-${tag}-consent-transactions`;
    // The merchant claims the consent first: a transactionEvent of an unclaimed consent starts nothing.
    await facade.claimConsent(burstConsent);
    await sandboxCall(sandboxUrl, 'PUT', `/_sandbox/consents/${burstConsent}`, {
      operatingAccounts: [`${tag}-op-1`, `${tag}-op-2`, `${tag}-op-3`],
    });
    await sandboxCall(sandboxUrl, 'POST', `/_sandbox/consents/${burstConsent}/transaction-events`, {
      count: BURST,
      withinMs: 2_000,
    });
    out(
      `  consent refresh ${refreshConsent} (3 banks, events twice) and a burst of ${BURST} transactionEvents started`,
    );
    await sleep(Math.max(0, killedAt + 3_000 - Date.now()));
    apiVictim.start();
    await waitForHttp(`${internalUrls[0]}/readyz`, 60_000);
    if (TOPOLOGY === 'split') {
      // A history host lost mid-run: its shards move to the other history process, and back once it returns.
      const history = stack.servers.find((p) => p.name === 'temporal-history-2')!;
      const tKill = Date.now();
      await history.kill('SIGKILL');
      out(`  SIGKILL ${history.name} (half of the ${SPLIT_HISTORY_SHARDS} shards); restarted after 10 s`);
      await sleep(10_000);
      history.start();
      out(`  ${history.name} started again [${secs(Date.now() - tKill)}]`);
    }

    // ---- settle ---------------------------------------------------------------------------------------------
    const settleBound = Date.now() + 300_000;
    await waitForApplications(
      facade,
      apps.map((a) => a.ref),
      settleBound,
    );
    if (run.taskId) {
      run.view = await readRefresh(facade, refreshConsent, (v) => v.taskId === run.taskId && v.done, settleBound);
    }
    await waitForBankDeliveries(sandboxUrl, 90_000);
    await waitForTransactions(merchant, burstConsent, sandboxUrl, 90_000);
    const tFlows = Date.now();
    out(`  flows settled [${secs(tFlows - tApp)}]; comparing with the sandbox's ground truth`);

    // ---- compare --------------------------------------------------------------------------------------------
    const client = new Client({
      connection,
      namespace: NAMESPACE,
      // The harness reads workflow state as a merchant's code would: through the same encrypting data converter.
      dataConverter: createDataConverter(createPayloadCodec(parsePayloadEncryptionKeys(secrets.payloadKeys))),
    });
    const refs = new Set(apps.map((a) => a.ref));
    let truthFindings: Finding[] = [];
    let visibility: string[] = [];
    const until = Date.now() + 30_000;
    for (;;) {
      const bankApps = (await sandboxCall<ApplicationRecord[]>(sandboxUrl, 'GET', '/_sandbox/applications')).filter(
        (a) => refs.has(String(a.createRequest.merchantReference)),
      );
      const tasks = await sandboxCall<RefreshTaskRecord[]>(sandboxUrl, 'GET', '/_sandbox/refresh-tasks');
      const accountWebhooks = await sandboxCall<WebhookDelivery[]>(sandboxUrl, 'GET', '/_sandbox/account-webhooks');
      const transactions = compareTransactions({
        deliveries: accountWebhooks.filter((d) => String(d.body.consentId) === burstConsent),
        batches: merchant.transactionBatches.filter((b) => b.consentId === burstConsent),
      });
      const ours: OurApplication[] = [];
      for (const app of apps) {
        const our: OurApplication = { merchantReference: app.ref, answeredId: answered.get(app.ref) };
        const res = await facade.request(1, 'GET', `/applications/${app.ref}`);
        if (res.status === 200) {
          our.state = res.body as NonNullable<OurApplication['state']>;
          // A webhook the bank sent after the workflow closed is answered 200 `ignored`, rightly: the close time
          // tells those apart from one ignored while it ran (tools/chaos/truth.ts ignoredWhileOpen).
          const described = await client.workflow.getHandle(financeApplicationWorkflowId(MERCHANT, app.ref)).describe();
          our.closedAt = described.closeTime?.toISOString();
        }
        ours.push(our);
      }
      const recordedTaskIds = new Set<string>();
      for await (const wf of client.workflow.list({
        query: `WorkflowType = '${consentRefreshWorkflowType}' AND ConsentId = '${refreshConsent}'`,
      })) {
        const taskId = wf.typedSearchAttributes.get(RefreshTaskId);
        if (taskId) recordedTaskIds.add(taskId);
      }
      truthFindings = [
        ...compareApplications({
          bank: bankApps,
          ours,
          callbacks: { merchantId: MERCHANT, keys: merchant.financeKeys },
        }).findings,
        ...compareRefreshes({
          tasks: tasks.filter((t) => t.consentId === refreshConsent),
          runs: [run],
          recordedTaskIds,
        }).findings,
        ...transactions.findings,
      ];
      if (transactions.figures.eventsAcknowledged < BURST) {
        truthFindings.push({
          category: 'lost',
          subject: burstConsent,
          what: `${transactions.figures.eventsAcknowledged} of ${BURST} transactionEvents answered 2xx`,
        });
      }
      visibility = visibilityProblems(bankApps, await visibleApplications(client, [...refs]));
      if (run.taskId && !recordedTaskIds.has(run.taskId)) {
        visibility.push(`visibility: no consentRefreshWorkflow with RefreshTaskId = '${run.taskId}'`);
      }
      if ((truthFindings.length === 0 && visibility.length === 0) || Date.now() > until) break;
      await sleep(3_000); // visibility and a callback on its way are eventual: look again
    }
    for (const f of truthFindings) findings.push(`${f.category.toUpperCase()} ${f.subject}: ${f.what}`);
    // The history of each application with a finding, for the post-mortem (Web UI JSON import format).
    for (const ref of new Set(truthFindings.map((f) => f.subject).filter((s) => refs.has(s)))) {
      const history = await client.workflow.getHandle(financeApplicationWorkflowId(MERCHANT, ref)).fetchHistory();
      writeFileSync(join(runDir, `history-${ref}.json`), JSON.stringify(history, null, 2));
    }
    findings.push(...visibility);

    const outcomes = await Promise.all(
      pendingAtKill.map(async (p) => {
        const history = await client.workflow.getHandle(p.workflowId, p.runId).fetchHistory();
        return activityOutcome(history.events ?? [], p.activityId);
      }),
    );
    const takeover = judgeTakeover(victimIdentity, pendingAtKill, outcomes);
    findings.push(...takeover.problems);
    out(
      `  takeover: ${takeover.takenOver} of ${victim.name}'s activities completed by the other worker, ` +
        `${takeover.finishedBeforeKill} finished before the kill, ${takeover.closedOtherwise} canceled by their workflow`,
    );

    for (const p of [stack.postgres?.process, ...stack.servers, stack.sandbox, ...stack.apis, stack.workers[1]!]) {
      for (const e of p?.unexpectedExits ?? []) findings.push(`${e.name} exited on its own (${e.code ?? e.signal})`);
    }
    out(
      `  ${apps.length} applications, 1 refresh, 1 transaction burst: ` +
        `${findings.length === 0 ? 'all match the bank' : `${findings.length} finding(s)`}`,
    );
    const tChecked = Date.now();

    // ---- the rolling upgrade: A → B with runs in flight, A's workers stopped; the replay gate (tools/cluster/upgrade.ts) --
    // The gate runs with the workers' variables; without LOG_LEVEL its report alone is written (stdout, JSON).
    const { LOG_LEVEL: _logLevel, ...gateEnv } = {
      ...appEnv,
      WORKER_DEPLOYMENT_NAME: A.deploymentName,
      PUBLIC_BASE_URL: publicUrls[0],
    };
    const upgrade = await rollingUpgrade({
      root,
      logOf,
      connection,
      client,
      facade,
      sandboxUrl,
      merchant,
      merchantId: MERCHANT,
      tag,
      workers: stack.workers,
      workerEnv,
      gateEnv,
      a: A,
      variants,
      finishedOnA: apps.map((a) => a.ref),
    });
    findings.push(...upgrade.findings);
    const tUpgrade = Date.now();
    writeFileSync(
      join(runDir, 'result.json'),
      JSON.stringify({ findings, pendingAtKill, outcomes, run, upgrade: upgrade.figures }, null, 2),
    );
    for (const f of findings) out(`  FAIL ${f}`);
    out(
      `${COMMAND}: ${findings.length === 0 ? 'passed' : 'FAILED'} in ${secs(Date.now() - t0)} ` +
        `(toolchain ${secs(tReady - t0)}, cluster up ${secs(tUp - tReady)}, app processes ${secs(tApp - tUp)}, ` +
        `flows ${secs(tFlows - tApp)}, rolling upgrade ${secs(tUpgrade - tChecked)})`,
    );
    return findings.length === 0 ? 0 : 1;
  } finally {
    await stopInOrder(stack);
  }
}

// Ctrl-C or SIGTERM: stop what is running the normal way (PostgreSQL's fast shutdown frees its shared memory),
// bounded; a second signal, or the bound, exits at once (the exit handlers then SIGKILL what is left).
let running: Stack | undefined;
let signalled = false;
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.once(signal, () => {
    signalled = true;
    process.once(signal, () => process.exit(code));
    const stopping = running ? abortAll(running) : Promise.resolve();
    void Promise.race([stopping, sleep(20_000)]).finally(() => process.exit(code));
  });
}
main().then(
  (code) => {
    if (!signalled) process.exit(code);
  },
  (err: unknown) => {
    if (signalled) return; // the signal handler stops the stack and exits
    process.stderr.write(
      `${COMMAND} failed: ${err instanceof Failure ? err.message : ((err as Error)?.stack ?? String(err))}\n`,
    );
    process.exit(err instanceof Failure ? 1 : 2);
  },
);
