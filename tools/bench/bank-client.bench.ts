import { createBankClient } from '../../src/activities';
import { startSandbox } from '../../src/sandbox';
import { report, runPool, summarize } from './stats';

/**
 * The bank client against the sandbox over loopback HTTP: token sharing under a cold cache, and the
 * latency and throughput of status reads through one pooled dispatcher.
 */
export async function benchBankClient(): Promise<void> {
  const sandbox = await startSandbox({
    clientId: 'bench',
    clientSecret: 'bench-secret',
    lifecycle: { stepMs: 3_600_000 },
  });
  const bank = createBankClient({
    authUrl: sandbox.url,
    baseUrl: sandbox.url,
    clientId: 'bench',
    clientSecret: 'bench-secret',
  });
  try {
    const created = await bank.client.createApplication({ redirectUrl: 'https://shop.example/return' });
    // Fresh client: cold token cache.
    const cold = createBankClient({
      authUrl: sandbox.url,
      baseUrl: sandbox.url,
      clientId: 'bench',
      clientSecret: 'bench-secret',
    });
    const before = sandbox.control.tokenRequestCount();
    const start = performance.now();
    await Promise.all(
      Array.from({ length: 200 }, () => cold.client.getApplicationStatus(created.financeApplicationId)),
    );
    report('bank client: 200 concurrent calls, cold cache', {
      tokenRequests: sandbox.control.tokenRequestCount() - before,
      wallMs: performance.now() - start,
    });
    await cold.close();

    for (const concurrency of [1, 8, 32]) {
      const n = concurrency === 1 ? 500 : 2_000;
      const t0 = performance.now();
      const latencies = await runPool(n, concurrency, async () => {
        await bank.client.getApplicationStatus(created.financeApplicationId);
      });
      const s = summarize(latencies);
      report(`bank client: status reads, concurrency ${concurrency}`, {
        n,
        reqPerSec: (n / (performance.now() - t0)) * 1000,
        p50ms: s.p50,
        p99ms: s.p99,
      });
    }
  } finally {
    await bank.close();
    await sandbox.close();
  }
}
