import { DefaultLogger, Runtime } from '@temporalio/worker';
import { benchBankClient } from './bank-client.bench';
import { benchBurst } from './burst.bench';
import { benchColdStart } from './cold-start.bench';
import { benchDeployUnderLoad } from './deploy-under-load.bench';
import { benchLifecycle } from './lifecycle.bench';
import { benchOpenApplications } from './open-applications.bench';
import { benchReceiver } from './receiver.bench';
import { benchReceiverHttp } from './receiver-http.bench';
import { benchScaleOut } from './scale-out.bench';
import { benchTenancyThroughput } from './tenancy-throughput.bench';
import { benchWebhookFlood } from './webhook-flood.bench';
import { benchWorkerMemory } from './worker-memory.bench';

/**
 * `npm run bench`: prints figures, asserts nothing. Timings on a shared 2-core machine are noisy: compare
 * ratios within one run rather than absolute numbers across runs.
 */
async function main(): Promise<void> {
  process.stdout.write(`node ${process.version}, ${new Date().toISOString()}\n`);
  // Once per process (the SDK refuses a second install): the benches' workers log errors only.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const only = process.argv.slice(2);
  // [name, bench, run only when named: `npm run bench -- <name>`]
  const benches: [string, () => Promise<void>, boolean?][] = [
    ['bank-client', benchBankClient],
    // `npm start` from no dist, then again with nothing to rebuild (about a minute; removes dist).
    ['cold-start', benchColdStart],
    ['lifecycle', benchLifecycle],
    ['receiver', benchReceiver],
    ['receiver-http', benchReceiverHttp],
    // 10,000 invented financeApplicationIds on one webhook URL (BENCH_FLOOD_WEBHOOKS): a few minutes.
    ['webhook-flood', benchWebhookFlood],
    // About 20 minutes at the default 10,000 applications (BENCH_OPEN_APPLICATIONS sets the count).
    ['open-applications', benchOpenApplications],
    // 10,000 applications through the facade in 60 s on a worker with a 768 MiB heap (BENCH_BURST_*): ≈10 min.
    ['burst', benchBurst, true],
    // The split cluster, 4 workers, 2 APIs, 50,000 applications with kills (BENCH_SCALE_OUT_*): hours.
    ['scale-out', benchScaleOut, true],
    ['worker-memory', benchWorkerMemory, true], // ≈15 min per cache size (10,000 applications)
    // This checkout against BENCH_BASELINE_REF (default a3f4fed); ≈6 min, plus ≈1 min building the baseline.
    ['tenancy-throughput', benchTenancyThroughput],
    // A Worker Versioning deploy under load; ≈10 min at BENCH_OPEN_APPLICATIONS=1000, far more at 10,000.
    ['deploy-under-load', benchDeployUnderLoad, true],
  ];
  for (const [name, bench, whenNamed] of benches) {
    if (only.length ? !only.includes(name) : whenNamed) continue;
    await bench();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${String((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  },
);
