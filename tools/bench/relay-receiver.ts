import { createServer } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { financeApplicationStatusChangedSignal } from '../../src/shared/finance-application';
import { financeApplicationWorkflowId, parseWebhookKey } from '../../src/shared/ids';
import { testDataConverter } from '../harness/temporal-fixtures';

/**
 * The floor of any webhook receiver, for receiver.bench.ts: a bare `node:http` server that turns each POST into the
 * same signal as the API's receiver, with the same payload codec, and answers 202, and does nothing else (no
 * authenticity, content-type, size or schema check, no routing, logging or metrics). What this costs on top of the
 * bare signal loop is the HTTP hop itself; what the API costs on top of this is the receiver's own work.
 * Child process (IPC: sends `{ port }` once listening). RELAY_SETUP: `{ address, namespace }`; the webhook
 * path's key (`/webhooks/finance-applications/<merchantId>~<ref>/<hash>`) names the workflow.
 */
async function main(): Promise<void> {
  const { address, namespace } = JSON.parse(process.env.RELAY_SETUP ?? '') as { address: string; namespace: string };
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace, dataConverter: testDataConverter });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const key = parseWebhookKey(decodeURIComponent((req.url ?? '').split('/')[3] ?? ''));
      if (!key) {
        res.writeHead(404);
        res.end();
        return;
      }
      const { financeApplicationId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        financeApplicationId: string;
      };
      const workflowId = financeApplicationWorkflowId(key.merchantId, key.merchantReference);
      client.workflow
        .getHandle(workflowId)
        .signal(financeApplicationStatusChangedSignal, { financeApplicationId })
        .then(
          () => {
            res.writeHead(202, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ status: 'accepted', workflowId }));
          },
          () => {
            res.writeHead(503);
            res.end();
          },
        );
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.send!({ port: typeof addr === 'object' && addr ? addr.port : 0 });
  });
  // Stopped by SIGTERM: exit through process.exit, which writes a --cpu-prof profile (a signal's default would not).
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => {
    server.close();
    void connection.close().then(() => process.exit(0));
  });
}

if (require.main === module) void main();
