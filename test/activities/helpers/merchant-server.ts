import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A merchant callback endpoint on 127.0.0.1 that answers each POST with the next queued status (else 200). */
export async function startMerchant(): Promise<{
  url: string;
  received: { headers: IncomingHttpHeaders; body: string }[];
  answerNext(status: number): void;
  close(): Promise<void>;
}> {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const answers: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answers.shift() ?? 200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/paylater?token=merchant-path-secret`,
    received,
    answerNext: (status) => void answers.push(status),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
