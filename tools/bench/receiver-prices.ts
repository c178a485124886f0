import { openSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { ApiDrain } from '../../src/api/drain';
import { createMetrics } from '../../src/api/metrics';
import { requestIdFrom } from '../../src/api/request-log';
import { withinSignalDeadline } from '../../src/api/resources/webhooks/receiver';
import { FinanceApplicationWebhookSchema } from '../../src/api/resources/webhooks/schemas';
import { jsonContentTypeProblem } from '../../src/api/json-body';
import { isValidWebhookHash, tenantWebhookHash } from '../../src/security/webhook-hash';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { connectClient } from '../../src/temporal/connection';
import { testDataConverter } from '../harness/temporal-fixtures';
import { median } from './stats';

/** One step the receiver does that the bare relay does not, and its CPU per webhook in µs. */
export interface Price {
  step: string;
  /** CPU µs per webhook. */
  us: number;
  /** How it was measured. */
  how: string;
  /** Not part of the receiver in production (a debug line). */
  optional?: boolean;
}

const ITERATIONS = 20_000;

/** CPU µs per call of `fn` (user + system of this process) over `count` calls, after `warmUp` calls. */
async function cpuPerCall(fn: (i: number) => unknown, count: number, warmUp = count): Promise<number> {
  for (let i = 0; i < warmUp; i++) await fn(i);
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) await fn(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

/** A step's price: CPU µs per call over ITERATIONS calls. */
const priced = (fn: () => unknown) => cpuPerCall(fn, ITERATIONS);

/**
 * The receiver's own steps, each priced alone with the production code (src/api/...), in a process that does
 * nothing else: the hash check, the content-type check, the schema check, the signal deadline (with the drain's
 * bound), the request id, the metrics, and the log line (a level check in production; written when LOG_LEVEL=debug).
 * A child of receiver.bench.ts (sends its Price[] over IPC).
 */
async function main(): Promise<void> {
  const temporal = JSON.parse(process.env.RECEIVER_PRICES ?? '{}') as Partial<SignalTargets>;
  const secret = 'bench-webhook-hash-secret-0123456789abcdef';
  const merchant = 'test-merchant';
  const reference = 'bench-rcv-1-0a1b2c3d';
  const hash = tenantWebhookHash(secret, merchant, reference);
  const body = { financeApplicationId: '0c3d9b8e-3f6e-4a51-9d7e-2b8e4f1a6c55' };
  // A real client over a connection never opened: withDeadline is the SDK's own (its async-context store).
  const client = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const drain = new ApiDrain();
  const metrics = createMetrics();
  const devNull = openSync('/dev/null', 'w');
  const logger = (level: string) =>
    pino({ level, base: { pid: process.pid, hostname: 'bench', name: 'api' } }, pino.destination({ dest: devNull }));
  const production = logger('info').child({ listener: 'public' });
  const debugging = logger('debug').child({ listener: 'public' });
  const line = (log: pino.Logger) => {
    if (!log.isLevelEnabled('debug')) return;
    log.debug(
      {
        reqId: 'f1e2d3c4',
        req: { id: 'f1e2d3c4', method: 'POST', path: '/webhooks/finance-applications/test-merchant~ref/…' },
        res: { statusCode: 202 },
        responseTime: 3,
      },
      'POST /webhooks/finance-applications/test-merchant~ref/… 202',
    );
  };
  const signalled = Promise.resolve({ workflowId: 'wf' });
  const shuttingDown = () => new Error('shutting down');
  const prices: Price[] = [
    {
      step: 'hash check (HMAC-SHA256, constant-time compare, current and previous secret)',
      us: await priced(() => isValidWebhookHash([secret, `${secret}-previous`], reference, hash, merchant)),
      how: 'isValidWebhookHash',
    },
    {
      step: 'content type and body schema (zod)',
      us: await priced(() => {
        jsonContentTypeProblem('application/json');
        return FinanceApplicationWebhookSchema.safeParse(body);
      }),
      how: 'jsonContentTypeProblem + FinanceApplicationWebhookSchema.safeParse',
    },
    {
      step: 'signal deadline (gRPC deadline, hard-bound timer, drain bound)',
      us: await priced(() =>
        withinSignalDeadline(client, () => signalled, { expired: drain.expired, error: shuttingDown }),
      ),
      how: 'withinSignalDeadline around a settled call',
    },
    {
      step: 'request id (X-Request-Id, generated)',
      us: await priced(() => requestIdFrom(undefined)),
      how: 'requestIdFrom (randomUUID)',
    },
    {
      step: 'metrics (request-duration histogram, webhook counter)',
      us: await priced(() => {
        const end = metrics.httpRequests.startTimer({ listener: 'public', method: 'POST' });
        end({ route: '/webhooks/finance-applications/:ref/:hash', status: '202' });
        metrics.webhooks.inc({ kind: 'financeApplication', outcome: 'accepted' });
      }),
      how: 'createMetrics(): startTimer/end + inc',
    },
    {
      step: 'log line, production (LOG_LEVEL=info: a level check, nothing written)',
      us: await priced(() => line(production)),
      how: 'isLevelEnabled("debug")',
    },
    {
      step: 'log line, if written (LOG_LEVEL=debug; not in the figure above)',
      us: await priced(() => line(debugging)),
      how: 'pino to /dev/null',
      optional: true,
    },
  ];
  if (temporal.address) prices.push(await grpcDeadlinePrice(temporal as SignalTargets));
  process.send!(prices);
}

/** Where the signals of the gRPC price go: the bench's dev server. */
export interface SignalTargets {
  address: string;
  namespace: string;
}

const SIGNALS = 1_000;

/**
 * The one price that needs Temporal: the same signal, one at a time, from a client as the relay makes it (the SDK's
 * defaults, no deadline) and from one as the API makes it (src/temporal/connection.ts: the deadline-bound retry
 * interceptor) under the receiver's signal deadline; CPU per signal of each, the difference is the price.
 */
async function grpcDeadlinePrice(targets: SignalTargets): Promise<Price> {
  const relayLike = new Client({
    connection: await Connection.connect({ address: targets.address }),
    namespace: targets.namespace,
    dataConverter: testDataConverter,
  });
  const { client: apiLike, connection } = await connectClient(
    { address: targets.address, namespace: targets.namespace, env: {} },
    { dataConverter: testDataConverter },
  );
  // Runs of their own on a task queue no worker polls: a signal adds an event and wakes no workflow, so the bench's
  // worker gets no backlog of tasks from here (it would still be working it off when the bench stops).
  const workflowIds = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const workflowId = `receiver-price-${process.pid}-${i}`;
      await relayLike.workflow.start('receiverPriceTarget', { taskQueue: `receiver-price-${process.pid}`, workflowId });
      return workflowId;
    }),
  );
  const signal = (client: Client, i: number) =>
    client.workflow
      .getHandle(workflowIds[i % workflowIds.length]!)
      .signal(financeApplicationStatusChangedSignal, { financeApplicationId: 'price' });
  const perSignal = (one: (i: number) => Promise<unknown>) => cpuPerCall(one, SIGNALS, 200);
  const bare: number[] = [];
  const bounded: number[] = [];
  // The client's deadline only (the receiver's own bookkeeping around it is priced above); each first in turn.
  const asApi = (i: number) => apiLike.withDeadline(Date.now() + 4_000, () => signal(apiLike, i));
  for (let round = 0; round < 6; round++) {
    if (round % 2) bounded.push(await perSignal(asApi));
    bare.push(await perSignal((i) => signal(relayLike, i)));
    if (round % 2 === 0) bounded.push(await perSignal(asApi));
  }
  await Promise.all(workflowIds.map((id) => relayLike.workflow.getHandle(id).terminate('priced')));
  await relayLike.connection.close();
  await connection.close();
  return {
    step: 'the signal call as the API makes it: gRPC deadline, deadline-bound retries',
    us: median(bounded) - median(bare),
    how:
      `CPU per signal ${median(bounded).toFixed(0)} against ${median(bare).toFixed(0)} µs with the SDK's defaults, ` +
      `medians of 6 × ${SIGNALS}: within their noise`,
  };
}

if (require.main === module)
  void main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`receiver prices failed: ${String((err as Error)?.stack ?? err)}\n`);
      process.exit(1);
    },
  );
