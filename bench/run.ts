import { DefaultLogger, Runtime } from '@temporalio/worker';
import { benchBankClient } from './bank-client.bench';
import { benchLifecycle } from './lifecycle.bench';
import { benchReceiver } from './receiver.bench';

/**
 * `npm run bench`: prints figures, asserts nothing. Timings on a shared 2-core machine are noisy: compare
 * ratios within one run rather than absolute numbers across runs.
 */
async function main(): Promise<void> {
  process.stdout.write(`node ${process.version}, ${new Date().toISOString()}\n`);
  // Once per process (the SDK refuses a second install): the benches' workers log errors only.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const only = process.argv.slice(2);
  const benches: [string, () => Promise<void>][] = [
    ['bank-client', benchBankClient],
    ['lifecycle', benchLifecycle],
    ['receiver', benchReceiver],
  ];
  for (const [name, bench] of benches) {
    if (only.length && !only.includes(name)) continue;
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
