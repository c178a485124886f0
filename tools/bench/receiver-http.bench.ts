import { Agent, type RequestListener, type Server } from 'node:http';
import type { Client } from '@temporalio/client';
import pino from 'pino';
import { createPublicApp } from '../../src/api/app';
import { boundPort, closeServer, listen } from '../../src/api/http-server';
import { createMetrics } from '../../src/api/metrics';
import { financeApplicationWebhookUrl } from '../../src/security/webhook-hash';
import { postRaw } from '../harness/http';
import { testMerchants } from '../harness/merchant-fixtures';

const COMMAND = 'npm run bench -- receiver-http';
const SECRET = 'bench-webhook-hash-secret-0123456789abcdef';
const REF = 'bench-ref-1';
const REQUESTS = Number(process.env.RECEIVER_HTTP_BENCH_REQUESTS) || 6_000;
const ROUNDS = Number(process.env.RECEIVER_HTTP_BENCH_ROUNDS) || 5;

/**
 * The public listener's HTTP layer alone, in one process: CPU per finance webhook over a keep-alive loopback
 * connection, one request at a time, with Temporal's answer stubbed (the signal resolves on the next turn of the
 * event loop), so that only the listener's own work differs between the paths:
 * - `express`: the public app (an Express app), the webhook in the bank's form;
 * - `bare`: a `node:http` handler that reads the body, parses it, awaits the same stub and answers 202, nothing else.
 * The client's own CPU is in each figure alike; compare the differences. The receiver bench (`receiver`) measures
 * the whole path with Temporal; this one says what the routing costs without its noise. Interleaved rounds, medians.
 */
export async function benchReceiverHttp(): Promise<void> {
  const client = {
    withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    workflow: { getHandle: () => ({ signal: () => new Promise<void>((resolve) => setImmediate(resolve)) }) },
  } as unknown as Client;
  const app = createPublicApp({
    client,
    taskQueue: 'bench',
    webhooks: { hashSecret: SECRET, securityHeader: '' },
    merchantApiKeys: [],
    merchants: testMerchants(),
    // Lines at info and above are written (none on this path), as in production.
    logger: pino({ level: 'info' }, pino.destination({ dest: '/dev/null', sync: true })),
    metrics: createMetrics(),
    checkTemporal: () => Promise.resolve(),
  });
  const bare: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      void client.workflow
        .getHandle('wf')
        .signal('s')
        .then(() => {
          res.writeHead(202, { 'content-type': 'application/json' });
          res.end('{"status":"accepted"}');
        });
    });
  };
  const path = new URL(financeApplicationWebhookUrl('http://bench', SECRET, REF, 'bench')).pathname;
  const paths = {
    express: { listener: app, path },
    bare: { listener: bare, path },
  };
  const cpu: Record<keyof typeof paths, number[]> = { express: [], bare: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { listener, path }] of Object.entries(paths) as [keyof typeof paths, (typeof paths)['bare']][])
      cpu[name].push(await cpuPerRequest(listener, path));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const e = median(cpu.express);
  const b = median(cpu.bare);
  const rows: [string, string][] = [
    ['public listener (Express), finance webhook', `${e.toFixed(3)} ms CPU/webhook (over bare: ${(e - b).toFixed(3)})`],
    ['bare node:http handler (parse, await, 202)', `${b.toFixed(3)} ms CPU/webhook`],
    ['bare / Express, CPU per webhook', `${(b / e).toFixed(2)}`],
  ];
  process.stdout.write(
    `receiver-http: ${REQUESTS} requests × ${ROUNDS} interleaved rounds per path, medians; Temporal stubbed\n`,
  );
  const width = Math.max(...rows.map((r) => r[0].length));
  const valueWidth = Math.max(...rows.map((r) => r[1].length));
  for (const [figure, value] of rows)
    process.stdout.write(`${figure.padEnd(width)}  ${value.padEnd(valueWidth)}  ${COMMAND}\n`);
}

/** CPU time of this process per request, one keep-alive request at a time, after a warm-up. */
async function cpuPerRequest(listener: RequestListener, path: string): Promise<number> {
  const server: Server = await listen(listener, 0, '127.0.0.1');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ financeApplicationId: 'fa-1' });
  const port = boundPort(server);
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
  const one = async () => (await postRaw({ port, path, agent, headers, body })).status;
  try {
    for (let i = 0; i < 500; i++) await one();
    const before = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) {
      const status = await one();
      if (status !== 202) throw new Error(`${path}: answered ${status}`);
    }
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000 / REQUESTS;
  } finally {
    agent.destroy();
    await closeServer(server, 100);
  }
}
