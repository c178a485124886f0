import { Client, Connection } from '@temporalio/client';
import { Pool } from 'undici';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { testDataConverter } from '../harness/temporal-fixtures';
import { runPool } from './stats';

/** What receiver.bench.ts hands this process (JSON in LOAD_LOOP). */
export type LoadLoopSetup = {
  targets: { workflowId: string; financeApplicationId: string; path: string; body: string }[];
} & ({ mode: 'signal'; address: string; namespace: string } | { mode: 'webhook'; apiUrl: string; connections: number });
export interface LoadLoopRun {
  concurrency: number;
  count: number;
}
export interface LoadLoopResult {
  ms: number;
  latencies: number[];
  /** HTTP answers by status (webhook mode). */
  statuses: Record<number, number>;
}

/**
 * Child process of receiver.bench.ts, one per path, so that neither shares an event loop with the worker:
 * - `signal`: the bare `getHandle(id).signal()` loop with the SDK's defaults (its CPU per signal is read like the
 *   API process's);
 * - `webhook`: the bank's side, POSTing the finance-application webhook to the API (undici, keep-alive).
 * Each IPC message is one run.
 */
async function main(): Promise<void> {
  const setup = JSON.parse(process.env.LOAD_LOOP ?? '') as LoadLoopSetup;
  const { targets } = setup;
  const statuses: Record<number, number> = {};
  let send: (i: number) => Promise<void>;
  let close: () => Promise<void>;
  if (setup.mode === 'signal') {
    const connection = await Connection.connect({ address: setup.address });
    // Encrypting like the API's client, so both paths pay for the payload codec.
    const client = new Client({ connection, namespace: setup.namespace, dataConverter: testDataConverter });
    send = (i) => {
      const t = targets[i % targets.length]!;
      return client.workflow
        .getHandle(t.workflowId)
        .signal(financeApplicationStatusChangedSignal, { financeApplicationId: t.financeApplicationId });
    };
    close = () => connection.close();
  } else {
    const pool = new Pool(setup.apiUrl, { connections: setup.connections, pipelining: 1 });
    send = async (i) => {
      const t = targets[i % targets.length]!;
      const res = await pool.request({
        method: 'POST',
        path: t.path,
        headers: { 'content-type': 'application/json' },
        body: t.body,
      });
      await res.body.dump();
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    };
    close = () => pool.close();
  }
  process.on('message', (run: LoadLoopRun) => {
    for (const key of Object.keys(statuses)) delete statuses[Number(key)];
    const start = performance.now();
    runPool(run.count, run.concurrency, send).then(
      (latencies) =>
        process.send!({ ms: performance.now() - start, latencies, statuses: { ...statuses } } satisfies LoadLoopResult),
      (err: unknown) => {
        process.stderr.write(`${setup.mode} loop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  });
  process.on('disconnect', () => void close().then(() => process.exit(0)));
  process.send!('ready');
}

if (require.main === module) void main();
